-- Grant history: one row per grant (grants FINAL: exact under replays), every
-- grant whose hold overlaps [from, to], after the cursor, in the order
-- (granted_at, cluster, key, grant_revision, spool_id). An empty filter string
-- (hasToken/hasCursor 0) means "no filter".
-- Filters on columns a grant never changes go to PREWHERE, which ClickHouse
-- applies before FINAL merges the grant's open and closed rows: the same rows
-- are kept, and far fewer rows are merged. ended_at changes when a grant ends,
-- so its condition stays in WHERE (after FINAL), as does end_kind; origin is
-- the same on both rows of a grant.
-- {source} is `grants`, or `grants_by_holder` (the same rows sorted by holder,
-- sql/056) when a holder is the narrowest filter: chosen by historySource().
-- Every etcd timeline's grants, each once: the current timeline's and those a
-- restore rolled back (a grant carried into a later timeline shows as that
-- timeline's row only), each with its timeline and rolled_back_by (sql/065).
-- Parameters: {db:Identifier} {source:Identifier} {key:String} {keyPrefix:String} {holder:String} {class:String} {namespace:String} {hasToken:UInt8} {token:UInt64} {endKind:String} {origin:String} {fromMs:Int64} {toMs:Int64} {hasCursor:UInt8} {afterMs:Int64} {afterCluster:String} {afterKey:String} {afterRevision:UInt64} {afterSpool:String} {limit:UInt32}
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
    origin,
    timeline,
    rolled_back_by
FROM {db:Identifier}.{source:Identifier} FINAL
PREWHERE ({key:String} = '' OR key = {key:String})
    AND ({keyPrefix:String} = '' OR startsWith(key, {keyPrefix:String}))
    AND ({holder:String} = '' OR holder = {holder:String})
    AND ({class:String} = '' OR class = {class:String})
    AND ({namespace:String} = '' OR namespace = {namespace:String})
    AND ({hasToken:UInt8} = 0 OR token = {token:UInt64})
    AND ({origin:String} = '' OR origin = {origin:String})
    AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    AND ({hasCursor:UInt8} = 0
         OR (granted_at, cluster, key, grant_revision, spool_id)
            > (fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC'), {afterCluster:String}, {afterKey:String}, {afterRevision:UInt64}, {afterSpool:String}))
WHERE (ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
    AND (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
    AND ({endKind:String} = '' OR end_kind = if({endKind:String} = 'held', '', {endKind:String}))
ORDER BY granted_at, cluster, key, grant_revision, spool_id
LIMIT {limit:UInt32}
