-- The classes of one stored risk-register run whose waiver status the
-- sink's rules can match (expired, expiring), by class.
-- Parameters: {db:Identifier} {runId:String} {date:Date} {statuses:Array(String)}
SELECT class, namespace, risk_owner, toString(waiver_expires) AS waiver_day, days_left, status
FROM {db:Identifier}.risk_register FINAL
WHERE run_id = {runId:String} AND register_date = {date:Date} AND has({statuses:Array(String)}, status)
ORDER BY class
