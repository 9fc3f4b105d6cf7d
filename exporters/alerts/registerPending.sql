-- The oldest stored risk-register run a sink has not delivered yet. A run
-- row is written only after its class rows (runRegister), so a listed run
-- is never half-written.
-- Parameters: {db:Identifier} {sink:String}
SELECT run_id, toString(register_date) AS register_day, toUnixTimestamp64Milli(as_of) AS as_of_ms
FROM {db:Identifier}.risk_register_runs FINAL
WHERE run_id NOT IN (SELECT run_id FROM {db:Identifier}.alert_register_deliveries WHERE sink = {sink:String})
ORDER BY created_at, run_id
LIMIT 1
