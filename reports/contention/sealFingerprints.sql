-- Seals hours of a cluster: each hour's fingerprint as of the checkpoint,
-- read as sealCandidates.sql and contention/covered.sql read it (no FINAL, no
-- timeline filter): equal to theirs as long as nothing newer arrived.
-- Parameters: {db:Identifier} {cluster:String} {hours:Array(UInt32)} {checkpoint:UInt64}
SELECT toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) AS hour_s,
    toString(max(grant_revision)) AS max_revision,
    toString(uniqExactIf(spool_id, unprotected = 1) + uniqExactIf(spool_id, unprotected = 1 AND row_version > 0)) AS spool_grants
FROM {db:Identifier}.grants
PREWHERE cluster = {cluster:String}
    AND granted_at >= toDateTime(arrayMin({hours:Array(UInt32)}), 'UTC')
    AND granted_at < toDateTime(arrayMax({hours:Array(UInt32)}) + 3600, 'UTC')
    AND toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) IN {hours:Array(UInt32)}
    AND grant_revision <= {checkpoint:UInt64} AND row_version <= {checkpoint:UInt64}
GROUP BY hour_s
