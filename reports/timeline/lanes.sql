-- Timeline lanes: the keys (one key, or every key under a prefix) with grants
-- whose hold overlaps [from, to], busiest first, with the number of such
-- grants per key; `lanes` and `total` count every matching key and grant
-- before the LIMIT, so the caller knows what was left out.
-- Immutable filters in PREWHERE (applied before FINAL merges a grant's open
-- and closed rows); ended_at changes when a grant ends, so it stays in WHERE.
-- Parameters: {db:Identifier} {key:String} {keyPrefix:String} {cluster:String} {fromMs:Int64} {toMs:Int64} {maxLanes:UInt32}
SELECT key, grants, count() OVER () AS lanes, sum(grants) OVER () AS total
FROM
(
    SELECT key, count() AS grants
    FROM {db:Identifier}.grants FINAL
    PREWHERE ({key:String} = '' OR key = {key:String})
        AND ({keyPrefix:String} = '' OR startsWith(key, {keyPrefix:String}))
        AND ({cluster:String} = '' OR cluster = {cluster:String})
        AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    WHERE (ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
        AND (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
    GROUP BY key
)
ORDER BY grants DESC, key
LIMIT {maxLanes:UInt32}
