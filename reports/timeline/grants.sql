-- Timeline bars: every grant of the chosen lanes whose hold overlaps
-- [from, to], oldest first (grants FINAL: exact under replays). Used only when
-- the lanes hold few enough grants to draw one bar each.
-- Parameters: {db:Identifier} {lanes:Array(String)} {cluster:String} {fromMs:Int64} {toMs:Int64} {limit:UInt32}
SELECT
-- @include reports/grantHistory/columns.sql
FROM {db:Identifier}.grants FINAL
PREWHERE key IN {lanes:Array(String)}
    AND ({cluster:String} = '' OR cluster = {cluster:String})
    AND
-- @include grants/scopeBound.sql
    AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
WHERE (ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
    AND (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
ORDER BY granted_at, cluster, key, grant_revision, spool_id
LIMIT {limit:UInt32}
