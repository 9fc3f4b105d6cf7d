-- The other direction of grants_check.sql: the start events an export's
-- range holds, each checked for its grant row. Every hold put, gap snapshot
-- hold and spool line timed in [from, to) that passes the export's filter
-- (read from the event's own columns: a grant row altered so that it no
-- longer passes the filter, hidden by a forged superseded mark, or deleted,
-- is found here) must have a row the export shows — the current timeline's,
-- or one a restore rolled back — of the same (cluster, lock, grant revision,
-- spool id), in its timeline or a later one (a restore carries held grants
-- into the next timeline). A put's or spool line's row, or the row the
-- snapshot alone started (start_known 0), must agree with it in every column
-- the event carries (by hash; grantsCheck.ts names them) and in its time. A
-- grant row ClickHouse rejected is in quarantine instead (rowWriter.ts): the
-- ids in {excused}, those whose tailer's proof grantsCheck.ts verified (a
-- quarantine row alone excuses nothing: sql/240). An event ingested in the
-- last {settleMs} ms above the checkpoint is not judged (the tailer writes a
-- batch's events before its grants). One row per problem, at most {limit}.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {holdPrefix:String} {settleMs:Int64} {durableKeys:Array(String)} {durableRevisions:Array(UInt64)} {sealedBeforeMs:Int64} {excused:Array(UInt64)} {limit:UInt32}
SELECT s.cluster AS cluster, s.key AS key, toString(s.grant_revision) AS grantRevision, s.spool_id AS spoolId, if(g.found = 1, g.timeline, s.timeline) AS timeline,
       multiIf(
           g.found = 0 AND NOT has({excused:Array(UInt64)}, cityHash64(toString(s.cluster), s.timeline, s.grant_revision, s.event_key)), concat('its ', s.event_type, ' at revision ', toString(s.revision), ' has no grant row in the export'),
           g.found = 1 AND (s.event_type != 'snapshot-hold' OR g.start_known = 0) AND (g.h != s.h OR g.granted_ms != s.at_ms),
               concat('the grant row differs from its ', s.event_type, ' at revision ', toString(s.revision)),
           '') AS problem,
       if(problem LIKE 'the grant row differs%', 'start', '') AS compare,
       toString(s.revision) AS eventRevision, s.event_key AS eventKey, s.timeline AS eventTimeline
FROM
(
    SELECT *
    FROM
    (
        -- The event's grant as the grant filter reads a grant row: the lock as `key`, the event's time as `granted_at`.
        SELECT cluster, if(op = 'spool', JSONExtractString(value, 'lock'), substring(key, length({holdPrefix:String}) + 1)) AS key, grant_revision,
               if(op = 'spool', substring(events.key, 8), '') AS spool_id, timeline, revision, event_type, namespace, lock_path, class, holder, session,
               token, epoch, wait_ms, origin, unprotected, wall_time AS granted_at, events.key AS event_key, toUnixTimestamp64Milli(wall_time) AS at_ms,
               cityHash64(namespace, lock_path, class, holder, session, token, epoch, wait_ms, origin, unprotected) AS h,
               cityHash64(cluster, if(op = 'spool', JSONExtractString(value, 'lock'), substring(events.key, length({holdPrefix:String}) + 1)), grant_revision,
                          if(op = 'spool', substring(events.key, 8), '')) AS k,
               -- What where.sql reads of a grant row's end and marks: a start event has no end, and every timeline's
               -- events are checked (an ended history's too: its grants stay in exports).
               CAST(NULL AS Nullable(DateTime64(3, 'UTC'))) AS ended_at, '' AS end_kind, toUInt32(0) AS superseded_by, toUInt32(0) AS rolled_back_by
        FROM {db:Identifier}.events FINAL
        PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
            AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
            AND event_type IN ('grant', 'snapshot-hold', 'unprotected-grant')
            AND
-- @include grants/filterEvents.sql
        WHERE ((event_type = 'grant' AND op = 'put') OR (event_type = 'snapshot-hold' AND op = 'snapshot') OR (event_type = 'unprotected-grant' AND op = 'spool'))
            -- In flight only when ingested within the settle window (never a future ingested_at: no digest hashes it)
            -- and above what the tailer's checkpoint says is durable, grant rows included (a spool line: revision 0).
            -- An event of a period a digest sealed is never in flight (a spool line, revision 0, has no checkpoint).
            AND NOT (ingested_at >= now64(3) - toIntervalMillisecond({settleMs:Int64}) AND ingested_at <= now64(3) + toIntervalSecond(5)
                     AND wall_time >= fromUnixTimestamp64Milli({sealedBeforeMs:Int64}, 'UTC')
                     AND (revision = 0 OR revision > {durableRevisions:Array(UInt64)}[indexOf({durableKeys:Array(String)}, concat(cluster, '/', toString(timeline)))]))
    )
    WHERE
-- @include grants/filterPrewhere.sql
        AND
-- @include grants/filterWhere.sql
) AS s
ASOF LEFT JOIN
(
    -- The rows an export shows (every timeline's grants, each once: sql/065) of the grant revisions the range's events name.
    SELECT cityHash64(cluster, key, grant_revision, spool_id) AS k, timeline, start_known, toUnixTimestamp64Milli(granted_at) AS granted_ms,
           cityHash64(namespace, lock_path, class, holder, session, token, epoch, wait_ms, origin, unprotected) AS h, toUInt8(1) AS found
    FROM {db:Identifier}.grants FINAL
    PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
        AND grant_revision IN (
            SELECT grant_revision FROM {db:Identifier}.events
            PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
                AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                AND event_type IN ('grant', 'snapshot-hold', 'unprotected-grant')
                AND
-- @include grants/filterEvents.sql
            )
    WHERE superseded_by = 0 OR rolled_back_by > 0
) AS g ON g.k = s.k AND s.timeline <= g.timeline
WHERE problem != ''
ORDER BY cluster, key, s.grant_revision, spoolId, timeline
LIMIT {limit:UInt32}
