-- The newest stored register run, of one register date (hasDate 1) or of any.
-- Parameters: {db:Identifier} {hasDate:UInt8} {date:Date}
SELECT run_id, toString(register_date) AS register_day, toUnixTimestamp64Milli(as_of) AS as_of_ms, trigger, requested_by
FROM {db:Identifier}.risk_register_runs FINAL
WHERE {hasDate:UInt8} = 0 OR register_date = {date:Date}
ORDER BY register_date DESC, created_at DESC, run_id DESC
LIMIT 1
