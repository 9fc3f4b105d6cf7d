-- Seals hours of a cluster: each hour's grants, held grants, and its
-- irregular grants — a protected grant granted before the protected grant
-- before it on the key (in the window's order), or whose previous grant was
-- granted before a protected grant earlier still. For a regular grant the
-- previous protected grant in any report window is the previous grant here
-- when that one is in the window, else none: that makes contention_handoffs
-- exact. (Unprotected grants sort first on a key, whatever their time: a
-- handoff needs both grants protected, so they never make one either way.) An hour with an
-- irregular grant is never read from its seal (clock skew between API
-- replicas, a foreign grant's own time): the report reads it raw.
-- Lookback as in sealHandoffs.sql.
-- Parameters: {hours:Array(UInt32)} (and those of sealKeyGrants.sql)
SELECT
    toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) AS hour_s,
    toString(countIf(irregular)) AS irregular,
    toString(count()) AS grants,
    toString(countIf(end_kind = '')) AS pending
FROM
(
    SELECT cluster, granted_at, end_kind,
        unprotected = 0 AND row_number() OVER w > 1 AND lagInFrame(unprotected) OVER w = 0
            AND (granted_at < lagInFrame(granted_at) OVER w
                 OR lagInFrame(granted_at) OVER w < maxIf(granted_at, unprotected = 0) OVER before) AS irregular
-- @include reports/contention/sealKeyGrants.sql
    WINDOW w AS (PARTITION BY cluster, key ORDER BY grant_revision, spool_id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW),
        before AS (PARTITION BY cluster, key ORDER BY grant_revision, spool_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
)
WHERE toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) IN {hours:Array(UInt32)}
GROUP BY hour_s
