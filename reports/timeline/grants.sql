-- Timeline bars: every grant of the chosen lanes whose hold overlaps
-- [from, to], oldest first (grants FINAL: exact under replays). Used only when
-- the lanes hold few enough grants to draw one bar each.
-- Parameters: {db:Identifier} {lanes:Array(String)} {cluster:String} {fromMs:Int64} {toMs:Int64} {limit:UInt32}
SELECT
    cluster,
    key,
    grant_revision,                      -- 64-bit: arrives as a decimal string
    token,
    holder,
    class,
    namespace,
    toUnixTimestamp64Milli(granted_at) AS granted_at_ms,
    toUnixTimestamp64Milli(ended_at) AS ended_at_ms,
    end_kind,
    end_revision,
    wait_ms,
    duration_ms,
    unprotected,
    spool_id,
    origin,                              -- foreign: put straight into etcd, not by the lock API
    timeline,
    rolled_back_by
FROM {db:Identifier}.grants FINAL
PREWHERE key IN {lanes:Array(String)}
    AND ({cluster:String} = '' OR cluster = {cluster:String})
    AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
WHERE (ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
    AND (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
ORDER BY granted_at, cluster, key, grant_revision, spool_id
LIMIT {limit:UInt32}
