-- Seals hours of a cluster, part 4 of 4: per hour and key, its grants (the
-- report's hottest keys are found from these), as of the checkpoint.
-- Parameters: {db:Identifier} {cluster:String} {hours:Array(UInt32)} {checkpoint:UInt64} {sealId:UInt64}
INSERT INTO {db:Identifier}.contention_key_hours (cluster, hour, seal_id, namespace, class, key, grants)
SELECT cluster, toStartOfHour(toDateTime(granted_at, 'UTC')) AS hour, {sealId:UInt64}, namespace, class, key, count()
FROM {db:Identifier}.grants FINAL
PREWHERE cluster = {cluster:String}
    AND granted_at >= toDateTime(arrayMin({hours:Array(UInt32)}), 'UTC')
    AND granted_at < toDateTime(arrayMax({hours:Array(UInt32)}) + 3600, 'UTC')
    AND toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) IN {hours:Array(UInt32)}
    AND grant_revision <= {checkpoint:UInt64} AND row_version <= {checkpoint:UInt64}
WHERE (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
GROUP BY cluster, hour, namespace, class, key
