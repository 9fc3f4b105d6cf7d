-- Where every grant-history page query (history.sql, pageEnd.sql,
-- historyArrow.sql) reads from: {source} FINAL, the grant filter's PREWHERE
-- part (grants/filterPrewhere.sql), and the keyset cursor — rows after
-- the cursor's position in the order (granted_at, cluster, key,
-- grant_revision, spool_id, timeline), columns a grant never changes, so it is in
-- PREWHERE too and a grant that ends between two pages keeps its place
-- (hasCursor 0: the first page). The includer may add PREWHERE conditions
-- (AND …), then its WHERE with grants/filterWhere.sql.
-- {source} is `grants`, `grants_by_key` (the same rows sorted by key and
-- grant time, sql/140) when a key is given, or `grants_by_holder` (sorted by
-- holder, sql/056) when a holder is the narrowest filter: chosen by
-- historySource(). The cursor's granted_at is repeated alone (implied by the
-- tuple) because the primary key can use it: on grants_by_key a later page
-- starts at its cursor instead of reading the key's earlier grants again.
-- {desc} 1: the page runs newest first (the *Desc.sql queries), so "after
-- the cursor" is below it.
-- Parameters: {db:Identifier} {source:Identifier} {desc:UInt8} {hasCursor:UInt8} {afterMs:Int64} {afterCluster:String} {afterKey:String} {afterRevision:UInt64} {afterSpool:String} {afterTimeline:UInt32}
FROM {db:Identifier}.{source:Identifier} FINAL
PREWHERE
-- @include grants/filterPrewhere.sql
    AND ({hasCursor:UInt8} = 0
         OR ({desc:UInt8} = 0 AND granted_at >= fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC'))
         OR ({desc:UInt8} = 1 AND granted_at <= fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC')))
    AND ({hasCursor:UInt8} = 0
         OR ({desc:UInt8} = 0 AND (granted_at, cluster, key, grant_revision, spool_id, timeline)
            > (fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC'), {afterCluster:String}, {afterKey:String}, {afterRevision:UInt64}, {afterSpool:String}, {afterTimeline:UInt32}))
         OR ({desc:UInt8} = 1 AND (granted_at, cluster, key, grant_revision, spool_id, timeline)
            < (fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC'), {afterCluster:String}, {afterKey:String}, {afterRevision:UInt64}, {afterSpool:String}, {afterTimeline:UInt32})))
