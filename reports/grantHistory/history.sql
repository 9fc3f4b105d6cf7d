-- Grant history: one row per grant (grants FINAL: exact under replays), every
-- grant whose hold overlaps [from, to], after the cursor, in the order
-- (granted_at, cluster, key, grant_revision, spool_id). The filters and the
-- window rule (overlapping) are the grant filter's (reports/grantFilter/:
-- PREWHERE for columns a grant never changes, WHERE for ended_at and end_kind);
-- the keyset cursor (hasCursor 0: first page) is on columns a grant never
-- changes, so it goes to PREWHERE too.
-- {source} is `grants`, or `grants_by_holder` (the same rows sorted by holder,
-- sql/056) when a holder is the narrowest filter: chosen by historySource().
-- Parameters: {db:Identifier} {source:Identifier} {hasCursor:UInt8} {afterMs:Int64} {afterCluster:String} {afterKey:String} {afterRevision:UInt64} {afterSpool:String} {limit:UInt32}
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
    origin
FROM {db:Identifier}.{source:Identifier} FINAL
PREWHERE
-- @include reports/grantFilter/prewhere.sql
    AND ({hasCursor:UInt8} = 0
         OR (granted_at, cluster, key, grant_revision, spool_id)
            > (fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC'), {afterCluster:String}, {afterKey:String}, {afterRevision:UInt64}, {afterSpool:String}))
WHERE
-- @include reports/grantFilter/where.sql
ORDER BY granted_at, cluster, key, grant_revision, spool_id
LIMIT {limit:UInt32}
