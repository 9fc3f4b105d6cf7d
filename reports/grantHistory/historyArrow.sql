-- Grant history as typed columns for Arrow IPC (format=arrow): the rows of
-- history.sql (same filters, same order; keep the three files' filters alike)
-- between the cursor and the page's end, found first by pageEnd.sql. The page
-- is bounded by that end, not by LIMIT, so pages meet exactly: a row that
-- arrives between the two queries is served by this page or the next, never
-- skipped. Names and meanings are the JSON items'; tokens and revisions stay
-- UInt64 (Arrow uint64), times are Arrow timestamp[ms, UTC]; LowCardinality
-- columns come as plain strings (ClickHouse's default for Arrow output).
-- Parameters: {db:Identifier} {source:Identifier} {key:String} {keyPrefix:String} {holder:String} {class:String} {namespace:String} {hasToken:UInt8} {token:UInt64} {endKind:String} {origin:String} {fromMs:Int64} {toMs:Int64} {hasCursor:UInt8} {afterMs:Int64} {afterCluster:String} {afterKey:String} {afterRevision:UInt64} {afterSpool:String} {hasEnd:UInt8} {endMs:Int64} {endCluster:String} {endKey:String} {endRevision:UInt64} {endSpool:String}
SELECT
    cluster,
    key,
    grant_revision AS grantRevision,
    token,
    holder,
    class,
    namespace,
    granted_at AS grantedAt,
    ended_at AS endedAt,
    if(end_kind IN ('release', 'expiry', 'force', 'session-close', 'epoch-advance', 'deleted', 'unknown'), end_kind, NULL) AS endKind,
    if(endKind IS NULL, NULL, end_revision) AS endRevision,
    wait_ms AS waitMs,
    if(endKind IS NULL, NULL, duration_ms) AS durationMs,
    toBool(unprotected) AS unprotected,
    if(origin = 'foreign', 'foreign', 'api') AS origin,
    timeline,
    toBool(rolled_back_by > 0) AS rolledBack
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
    AND ({hasEnd:UInt8} = 0
         OR (granted_at, cluster, key, grant_revision, spool_id)
            <= (fromUnixTimestamp64Milli({endMs:Int64}, 'UTC'), {endCluster:String}, {endKey:String}, {endRevision:UInt64}, {endSpool:String}))
WHERE (ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
    AND (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
    AND ({endKind:String} = '' OR end_kind = if({endKind:String} = 'held', '', {endKind:String}))
ORDER BY granted_at, cluster, key, grant_revision, spool_id
