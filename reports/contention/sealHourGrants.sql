-- The grants of the hours a seal covers, as of the checkpoint: the FROM, PREWHERE
-- and WHERE that sealStates.sql, sealPending.sql and sealKeys.sql share (one
-- definition, so the three parts of a seal read the same rows). Rows of later
-- revisions are dropped before FINAL, so the parts agree whatever arrives meanwhile;
-- every timeline's grants, each once (sql/065). Included with `-- @include`.
-- Parameters: {db:Identifier} {cluster:String} {hours:Array(UInt32)} {checkpoint:UInt64}
FROM {db:Identifier}.grants FINAL
PREWHERE cluster = {cluster:String}
    AND granted_at >= toDateTime(arrayMin({hours:Array(UInt32)}), 'UTC')
    AND granted_at < toDateTime(arrayMax({hours:Array(UInt32)}) + 3600, 'UTC')
    AND toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) IN {hours:Array(UInt32)}
    AND grant_revision <= {checkpoint:UInt64} AND row_version <= {checkpoint:UInt64}
WHERE (superseded_by = 0 OR rolled_back_by > 0)
