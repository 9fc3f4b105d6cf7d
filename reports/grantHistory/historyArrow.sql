-- Grant history as typed columns for Arrow IPC (format=arrow): the rows of
-- history.sql (the same grant filter, reports/grantFilter/, and order)
-- between the cursor and the page's end, found first by pageEnd.sql. The page
-- is bounded by that end, not by LIMIT, so pages meet exactly: a row that
-- arrives between the two queries is served by this page or the next, never
-- skipped. Names and meanings are the JSON items'; tokens and revisions stay
-- UInt64 (Arrow uint64), times are Arrow timestamp[ms, UTC]; LowCardinality
-- columns come as plain strings (ClickHouse's default for Arrow output).
-- endKinds: core/events.ts END_KINDS (any other end_kind, '' included, is null).
-- Parameters: {endKinds:Array(String)} {hasEnd:UInt8} {endMs:Int64} {endCluster:String} {endKey:String} {endRevision:UInt64} {endSpool:String} {endTimeline:UInt32}
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
    if(has({endKinds:Array(String)}, end_kind), end_kind, NULL) AS endKind,
    if(endKind IS NULL, NULL, end_revision) AS endRevision,
    wait_ms AS waitMs,
    if(endKind IS NULL, NULL, duration_ms) AS durationMs,
    toBool(unprotected) AS unprotected,
    if(origin = 'foreign', 'foreign', 'api') AS origin,
    timeline,
    toBool(rolled_back_by > 0) AS rolledBack,
    toBool(start_known) AS startKnown,
    if(endKind IS NULL, NULL, ended_at_error_ms) AS endedAtErrorMs
-- @include reports/grantHistory/pageSource.sql
    AND ({hasEnd:UInt8} = 0
         OR (granted_at, cluster, key, grant_revision, spool_id, timeline)
            <= (fromUnixTimestamp64Milli({endMs:Int64}, 'UTC'), {endCluster:String}, {endKey:String}, {endRevision:UInt64}, {endSpool:String}, {endTimeline:UInt32}))
WHERE
-- @include reports/grantFilter/where.sql
ORDER BY granted_at, cluster, key, grant_revision, spool_id, timeline
