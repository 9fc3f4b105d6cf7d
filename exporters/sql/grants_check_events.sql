-- The other direction of grants_check.sql: the start events an export's
-- range holds, each checked for its grant row. Every hold put, gap snapshot
-- hold and spool line timed in [from, to) that passes the export's filter
-- (read from the event's own columns: a grant row altered so that it no
-- longer passes the filter, or deleted, is found here) must have a grant row
-- of the same (cluster, lock, grant revision, spool id) in its timeline or a
-- later one (a restore carries held grants into the next timeline), and a
-- put's or spool line's row — or the row the snapshot alone started
-- (start_known 0) — must agree with it in every column the event carries. A
-- grant row ClickHouse rejected is in quarantine instead (rowWriter.ts), and
-- an event ingested in the last {settleMs} ms is not judged (the tailer writes
-- a batch's events before its grants). One row per problem, at most {limit}.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {holdPrefix:String} {settleMs:Int64} {limit:UInt32}
WITH ['namespace', 'lock_path', 'class', 'holder', 'session', 'token', 'epoch', 'wait_ms', 'origin', 'unprotected', 'granted_at'] AS names
SELECT s.cluster AS cluster, s.key AS key, toString(s.grant_revision) AS grantRevision, s.spool_id AS spoolId, s.timeline AS timeline,
       [s.namespace, s.lock_path, s.class, s.holder, s.session, toString(s.token), toString(s.epoch), toString(s.wait_ms), toString(s.origin),
        toString(s.unprotected), toString(toUnixTimestamp64Milli(s.granted_at))] AS mine,
       arrayStringConcat(arrayFilter((n, a, b) -> a != b, names, mine, arrayResize(g.fields, 11, '')), ', ') AS diff,
       multiIf(
           g.found = 0 AND q.found = 0, concat('its ', s.event_type, ' at revision ', toString(s.revision), ' has no grant row'),
           g.found = 1 AND (s.event_type != 'snapshot-hold' OR g.start_known = 0) AND diff != '',
               concat('the grant row differs from its ', s.event_type, ' at revision ', toString(s.revision), ' in ', diff),
           '') AS problem
FROM
(
    SELECT *
    FROM
    (
        -- The event's grant as the grant filter reads a grant row: the lock as `key`, the event's time as `granted_at`.
        SELECT cluster, if(op = 'spool', JSONExtractString(if(event_type = 'unprotected-grant', value, prev_value), 'lock'), substring(key, length({holdPrefix:String}) + 1)) AS key, grant_revision,
               if(op = 'spool', substring(events.key, 8), '') AS spool_id, timeline, revision, event_type, namespace, lock_path, class, holder, session,
               token, epoch, wait_ms, origin, unprotected, wall_time AS granted_at, if(op = 'spool', '', events.key) AS hold_key,
               -- What where.sql reads of a grant row's end and marks: a start event has no end, and every timeline's
               -- events are checked (an ended history's too: its grants stay in exports).
               CAST(NULL AS Nullable(DateTime64(3, 'UTC'))) AS ended_at, '' AS end_kind, toUInt32(0) AS superseded_by, toUInt32(0) AS rolled_back_by
        FROM {db:Identifier}.events FINAL
        PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
            AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
            AND event_type IN ('grant', 'snapshot-hold', 'unprotected-grant')
        WHERE ((event_type = 'grant' AND op = 'put') OR (event_type = 'snapshot-hold' AND op = 'snapshot') OR (event_type = 'unprotected-grant' AND op = 'spool'))
            AND ingested_at < now64(3) - toIntervalMillisecond({settleMs:Int64})
    )
    WHERE
-- @include reports/grantFilter/prewhere.sql
        AND
-- @include reports/grantFilter/where.sql
) AS s
ASOF LEFT JOIN
(
    SELECT cluster, key, grant_revision, spool_id, timeline, start_known, toUInt8(1) AS found,
           [namespace, lock_path, class, holder, session, toString(token), toString(epoch), toString(wait_ms), toString(origin),
            toString(unprotected), toString(toUnixTimestamp64Milli(granted_at))] AS fields
    FROM {db:Identifier}.grants FINAL
    PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
        -- Only the grant revisions the range's start events name (not the cluster's every grant).
        AND grant_revision IN (
            SELECT grant_revision FROM {db:Identifier}.events
            PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
                AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                AND event_type IN ('grant', 'snapshot-hold', 'unprotected-grant'))
) AS g ON g.cluster = s.cluster AND g.key = s.key AND g.grant_revision = s.grant_revision AND g.spool_id = s.spool_id AND s.timeline <= g.timeline
LEFT JOIN
(
    SELECT cluster, revision, key, toUInt8(1) AS found FROM {db:Identifier}.quarantine
    WHERE ({cluster:String} = '' OR cluster = {cluster:String}) AND op = 'grants-row'
    GROUP BY cluster, revision, key
) AS q ON q.cluster = s.cluster AND q.revision = s.grant_revision AND q.key = s.hold_key
WHERE problem != ''
ORDER BY cluster, key, s.grant_revision, spoolId, timeline
LIMIT {limit:UInt32}
