-- Seals hours of a cluster, part 2 of 4: the grants of those hours still held
-- as of the checkpoint (sealStates.sql counted their grant, not their end).
-- Parameters: {db:Identifier} {cluster:String} {hours:Array(UInt32)} {checkpoint:UInt64} {sealId:UInt64}
INSERT INTO {db:Identifier}.contention_pending (cluster, hour, seal_id, key, grant_revision, spool_id, timeline)
SELECT cluster, toStartOfHour(toDateTime(granted_at, 'UTC')), {sealId:UInt64}, key, grant_revision, spool_id, timeline
FROM {db:Identifier}.grants FINAL
PREWHERE cluster = {cluster:String}
    AND granted_at >= toDateTime(arrayMin({hours:Array(UInt32)}), 'UTC')
    AND granted_at < toDateTime(arrayMax({hours:Array(UInt32)}) + 3600, 'UTC')
    AND toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) IN {hours:Array(UInt32)}
    AND grant_revision <= {checkpoint:UInt64} AND row_version <= {checkpoint:UInt64}
WHERE (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
    AND end_kind = ''
