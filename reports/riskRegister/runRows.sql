-- The rows of one stored register run, by class.
-- Parameters: {db:Identifier} {runId:String} {date:Date}
SELECT
    class, namespace, risk_owner, toString(waiver_expires) AS waiver_day, days_left, status,
    grants_24h, grants_30d, distinct_keys_24h, distinct_keys_30d, expiries_24h, expiries_30d,
    force_releases_24h, force_releases_30d, unprotected_24h, unprotected_30d,
    foreign_grants_24h, foreign_grants_30d, deleted_24h, deleted_30d
FROM {db:Identifier}.risk_register FINAL
WHERE register_date = {date:Date} AND run_id = {runId:String}
ORDER BY class
