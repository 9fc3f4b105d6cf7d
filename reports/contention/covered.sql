-- The sealed hours the contention report can read from their seal: every hour
-- wholly inside [from, to] whose newest seal (sql/130) still matches the
-- hour's grants — the same highest grant revision and spool grants (read as
-- sealCandidates.sql reads them: no FINAL), the cluster's newest restore
-- generation, a lookback of at least {lookbackDays} days — and has no
-- irregular grant. Every other grant of the window is read raw (hours.sql).
-- Parameters: {db:Identifier} {fromMs:Int64} {toMs:Int64} {lookbackDays:UInt32}
WITH
    toStartOfHour(fromUnixTimestamp64Milli({fromMs:Int64} + 3599999, 'UTC')) AS first_hour,
    toStartOfHour(fromUnixTimestamp64Milli({toMs:Int64} + 1, 'UTC')) AS end_hour
SELECT s.cluster AS cluster, toUInt32(s.hour) AS hour_s
FROM
(
    SELECT cluster, hour, seal_id, max_revision, spool_grants, generation, lookback_days, irregular
    FROM {db:Identifier}.contention_seals FINAL
    WHERE hour >= first_hour AND hour < end_hour
) AS s
INNER JOIN
(
    SELECT cluster, toStartOfHour(toDateTime(granted_at, 'UTC')) AS hour,
        max(grant_revision) AS max_revision,
        uniqExactIf(spool_id, unprotected = 1) + uniqExactIf(spool_id, unprotected = 1 AND row_version > 0) AS spool_grants
    FROM {db:Identifier}.grants
    PREWHERE granted_at >= first_hour AND granted_at < end_hour
    GROUP BY cluster, hour
) AS f ON f.cluster = s.cluster AND f.hour = s.hour
LEFT JOIN
(
    SELECT cluster, max(generation) AS generation FROM {db:Identifier}.etcd_timelines GROUP BY cluster
) AS g ON g.cluster = s.cluster
WHERE s.irregular = 0 AND s.max_revision = f.max_revision AND s.spool_grants = f.spool_grants
    AND s.generation = g.generation AND s.lookback_days >= {lookbackDays:UInt32}
ORDER BY cluster, hour_s
SETTINGS join_use_nulls = 0
