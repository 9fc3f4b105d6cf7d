-- Where every grant-history page query (history.sql, pageEnd.sql,
-- historyArrow.sql) reads from: {source} FINAL, the grant filter's PREWHERE
-- part (reports/grantFilter/prewhere.sql), and the keyset cursor — rows after
-- the cursor's position in the order (granted_at, cluster, key,
-- grant_revision, spool_id), columns a grant never changes, so it is in
-- PREWHERE too and a grant that ends between two pages keeps its place
-- (hasCursor 0: the first page). The includer may add PREWHERE conditions
-- (AND …), then its WHERE with reports/grantFilter/where.sql.
-- {source} is `grants`, or `grants_by_holder` (the same rows sorted by holder,
-- sql/056) when a holder is the narrowest filter: chosen by historySource().
-- Parameters: {db:Identifier} {source:Identifier} {hasCursor:UInt8} {afterMs:Int64} {afterCluster:String} {afterKey:String} {afterRevision:UInt64} {afterSpool:String}
FROM {db:Identifier}.{source:Identifier} FINAL
PREWHERE
-- @include reports/grantFilter/prewhere.sql
    AND ({hasCursor:UInt8} = 0
         OR (granted_at, cluster, key, grant_revision, spool_id)
            > (fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC'), {afterCluster:String}, {afterKey:String}, {afterRevision:UInt64}, {afterSpool:String}))
