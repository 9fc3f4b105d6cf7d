-- Where an Arrow page of grant history ends: the sort key of the page's last
-- row (offset limit-1) and of the row after it, if any. The same filters and
-- order as history.sql (keep the three files' filters alike); only the sort
-- key is read, so finding the end costs far less than serving the page.
-- Parameters: {db:Identifier} {source:Identifier} {key:String} {keyPrefix:String} {holder:String} {class:String} {namespace:String} {hasToken:UInt8} {token:UInt64} {endKind:String} {origin:String} {fromMs:Int64} {toMs:Int64} {hasCursor:UInt8} {afterMs:Int64} {afterCluster:String} {afterKey:String} {afterRevision:UInt64} {afterSpool:String} {offset:UInt32}
SELECT
    toUnixTimestamp64Milli(granted_at) AS granted_at_ms,
    cluster,
    key,
    grant_revision,
    spool_id
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
LIMIT 2 OFFSET {offset:UInt32}
