-- Where an Arrow page reads from (historyArrow.sql, historyArrowDesc.sql): the
-- page source after the cursor, up to the page's end (pageEnd.sql), which for
-- a page newest first ({desc} 1) lies below.
-- Parameters: {desc:UInt8} {hasEnd:UInt8} {endMs:Int64} {endCluster:String} {endKey:String} {endRevision:UInt64} {endSpool:String} {endTimeline:UInt32}
-- @include reports/grantHistory/pageSource.sql
    AND ({hasEnd:UInt8} = 0
         OR ({desc:UInt8} = 0 AND (granted_at, cluster, key, grant_revision, spool_id, timeline)
            <= (fromUnixTimestamp64Milli({endMs:Int64}, 'UTC'), {endCluster:String}, {endKey:String}, {endRevision:UInt64}, {endSpool:String}, {endTimeline:UInt32}))
         OR ({desc:UInt8} = 1 AND (granted_at, cluster, key, grant_revision, spool_id, timeline)
            >= (fromUnixTimestamp64Milli({endMs:Int64}, 'UTC'), {endCluster:String}, {endKey:String}, {endRevision:UInt64}, {endSpool:String}, {endTimeline:UInt32})))
WHERE
-- @include grants/filterWhere.sql
