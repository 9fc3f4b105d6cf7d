-- Where an Arrow page of grant history ends: the sort key of the page's last
-- row (offset limit-1) and of the row after it, if any. The same grant filter
-- (reports/grantFilter/) and order as history.sql; only the sort
-- key is read, so finding the end costs far less than serving the page.
-- Parameters: {db:Identifier} {source:Identifier} {hasCursor:UInt8} {afterMs:Int64} {afterCluster:String} {afterKey:String} {afterRevision:UInt64} {afterSpool:String} {offset:UInt32}
SELECT
    toUnixTimestamp64Milli(granted_at) AS granted_at_ms,
    cluster,
    key,
    grant_revision,
    spool_id
FROM {db:Identifier}.{source:Identifier} FINAL
PREWHERE
-- @include reports/grantFilter/prewhere.sql
    AND ({hasCursor:UInt8} = 0
         OR (granted_at, cluster, key, grant_revision, spool_id)
            > (fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC'), {afterCluster:String}, {afterKey:String}, {afterRevision:UInt64}, {afterSpool:String}))
WHERE
-- @include reports/grantFilter/where.sql
ORDER BY granted_at, cluster, key, grant_revision, spool_id
LIMIT 2 OFFSET {offset:UInt32}
