-- The hours of a cluster that need a (new) seal: every hour with grants that
-- ended at or before {sealBeforeMs} (the time the tailer's checkpoint has
-- passed) and has no seal, or a seal whose fingerprint no longer matches the
-- hour's grants (a late grant, a shipped spool grant or end, a restore since)
-- or that looked back less than {lookbackDays} days. Read without FINAL: the
-- fingerprint is a max and distinct counts, which duplicates do not change.
-- Parameters: {db:Identifier} {cluster:String} {sealBeforeMs:Int64} {lookbackDays:UInt32} {generation:UInt32}
SELECT toUInt32(f.hour) AS hour_s
FROM
(
    SELECT toStartOfHour(toDateTime(granted_at, 'UTC')) AS hour,
        max(grant_revision) AS max_revision,
        uniqExactIf(spool_id, unprotected = 1) + uniqExactIf(spool_id, unprotected = 1 AND row_version > 0) AS spool_grants
    FROM {db:Identifier}.grants
    PREWHERE cluster = {cluster:String}
        AND granted_at < toStartOfHour(fromUnixTimestamp64Milli({sealBeforeMs:Int64}, 'UTC'))
    GROUP BY hour
) AS f
LEFT JOIN
(
    SELECT hour, max_revision, spool_grants, generation, lookback_days, irregular
    FROM {db:Identifier}.contention_seals FINAL
    WHERE cluster = {cluster:String}
) AS s ON s.hour = f.hour
WHERE s.hour != f.hour  -- no seal (the join's default hour)
    OR s.max_revision != f.max_revision OR s.spool_grants != f.spool_grants
    OR s.generation != {generation:UInt32} OR s.lookback_days < {lookbackDays:UInt32}
ORDER BY hour_s
SETTINGS join_use_nulls = 0
