-- The grants an export holds, each checked against the events it was derived
-- from (issue 25 F7: digests hash `events`; the tailer derives `grants` from
-- them, and exports read `grants`). A row is vouched for only when:
--   its start event agrees — the hold's put (event 'grant'), the gap snapshot
--     that saw it ('snapshot-hold') or the spool line ('unprotected-grant') of
--     the same (cluster, lock, grant revision, spool id), in the row's
--     timeline or the latest one before it (a grant carried into a restored
--     timeline was captured in the old one) — in every column the event
--     carries (namespace, path, class, holder, session, token, epoch, wait,
--     origin, unprotected), the event's time is the grant's time, and a
--     put or spool line was rolled back by a restore exactly when the row was;
--   when it ended, its end event agrees: the hold's delete (or the spool's end
--     line) at its end revision, of the kind end_kind names, with the same
--     grant columns, the end time and its error bound, and the duration is
--     the end less the grant time (never negative); an end 'unknown'
--     (closed in a gap: etcd no longer had the history) lies inside a
--     recorded gap of its cluster;
--   when it is open, it is: no end of its grant in the events of its timeline
--     or before that a restore did not roll back, and no end columns.
-- The export's own filter picks the rows (its endKind is bound '' by the
-- caller: a row whose end was altered must not slip out of the check); the
-- window rule is 'granted', so the start events are those timed in
-- [from, to). One row per problem, at most {limit}. An end event ingested in
-- the last {settleMs} ms does not judge an open row: the tailer writes a
-- batch's events before its grants.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {holdPrefix:String} {settleMs:Int64} {limit:UInt32}
WITH ['namespace', 'lock_path', 'class', 'holder', 'session', 'token', 'epoch', 'wait_ms', 'origin', 'unprotected'] AS names
SELECT g.cluster AS cluster, g.key AS key, toString(g.grant_revision) AS grantRevision, g.spool_id AS spoolId, g.timeline AS timeline,
       [g.namespace, g.lock_path, g.class, g.holder, g.session, toString(g.token), toString(g.epoch), toString(g.wait_ms), toString(g.origin), toString(g.unprotected)] AS mine,
       arrayStringConcat(arrayConcat(
           arrayFilter((n, a, b) -> a != b, names, mine, arrayResize(s.fields, 10, '')),
           if(toUnixTimestamp64Milli(g.granted_at) != s.at_ms, ['granted_at'], [])), ', ') AS start_diff,
       arrayStringConcat(arrayConcat(
           arrayFilter((n, a, b) -> a != b, names, mine, arrayResize(e.fields, 10, '')),
           if(toUnixTimestamp64Milli(assumeNotNull(g.ended_at)) != e.at_ms, ['ended_at'], []),
           if(g.ended_at_error_ms != e.error_ms, ['ended_at_error_ms'], [])), ', ') AS end_diff,
       multiIf(
           s.found = 0, 'no start event (hold put, gap snapshot or spool line) in events',
           start_diff != '', concat('differs from its start event (', s.event_type, ' at revision ', toString(s.revision), ') in ', start_diff),
           s.event_type != 'snapshot-hold' AND g.rolled_back_by != s.rolled_back_by,
               concat('rolled back by generation ', toString(g.rolled_back_by), ' but its start event (', s.event_type, ' at revision ', toString(s.revision), ') by ', toString(s.rolled_back_by)),
           g.end_kind = '' AND (g.end_revision != 0 OR g.ended_at IS NOT NULL OR g.duration_ms IS NOT NULL), 'open (no end kind) but carries an end',
           g.end_kind != '' AND (g.ended_at IS NULL OR g.duration_ms IS NULL
                                 OR assumeNotNull(g.duration_ms) != greatest(0, toUnixTimestamp64Milli(assumeNotNull(g.ended_at)) - toUnixTimestamp64Milli(g.granted_at))),
               'its duration is not its end time less its grant time',
           g.end_kind = '' AND o.found = 1, concat('open, but its end is in events (', o.event_type, ' at revision ', toString(o.revision), ')'),
           g.end_kind = 'unknown' AND NOT arrayExists(r -> r.1 <= g.row_version AND g.row_version <= r.2, gp.ranges),
               'ended unknown (in a gap) outside every recorded gap of its cluster',
           g.end_kind NOT IN ('', 'unknown') AND e.found = 0, concat('ended ', g.end_kind, ' at revision ', toString(g.end_revision), ': no such end event in events'),
           g.end_kind NOT IN ('', 'unknown') AND end_diff != '', concat('differs from its end event (', e.event_type, ' at revision ', toString(e.revision), ') in ', end_diff),
           '') AS problem
FROM
(
    SELECT *
    FROM {db:Identifier}.grants FINAL
    PREWHERE
-- @include reports/grantFilter/prewhere.sql
    WHERE
-- @include reports/grantFilter/where.sql
) AS g
ASOF LEFT JOIN
(
    -- Start events, one per grant and timeline (a put or spool line before a snapshot of the same hold).
    SELECT cluster, lock, grant_revision, spool_id, timeline, revision, event_type, rolled_back_by, toUInt8(1) AS found,
           [namespace, lock_path, class, holder, session, toString(token), toString(epoch), toString(wait_ms), toString(origin), toString(unprotected)] AS fields,
           toUnixTimestamp64Milli(wall_time) AS at_ms
    FROM
    (
        SELECT *, if(op = 'spool', JSONExtractString(if(event_type = 'unprotected-grant', value, prev_value), 'lock'), substring(key, length({holdPrefix:String}) + 1)) AS lock, if(op = 'spool', substring(key, 8), '') AS spool_id
        FROM {db:Identifier}.events FINAL
        PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
            AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
            AND event_type IN ('grant', 'snapshot-hold', 'unprotected-grant')
        WHERE (event_type = 'grant' AND op = 'put') OR (event_type = 'snapshot-hold' AND op = 'snapshot') OR (event_type = 'unprotected-grant' AND op = 'spool')
        ORDER BY event_type = 'snapshot-hold', revision
        LIMIT 1 BY cluster, lock, grant_revision, spool_id, timeline
    )
) AS s ON s.cluster = g.cluster AND s.lock = g.key AND s.grant_revision = g.grant_revision AND s.spool_id = g.spool_id AND g.timeline >= s.timeline
ASOF LEFT JOIN
(
    -- End events of the rows that ended: hold deletes at their end revisions, spool end lines (revision 0).
    SELECT cluster, lock, grant_revision, spool_id, revision, timeline, event_type, toUInt8(1) AS found,
           [namespace, lock_path, class, holder, session, toString(token), toString(epoch), toString(wait_ms), toString(origin), toString(unprotected)] AS fields,
           toUnixTimestamp64Milli(wall_time) AS at_ms, time_error_ms AS error_ms,
           transform(event_type, ['release', 'expiry', 'force-release', 'session-close', 'epoch-release', 'deleted'],
                     ['release', 'expiry', 'force', 'session-close', 'epoch-advance', 'deleted'], '') AS kind
    FROM
    (
        SELECT *, if(op = 'spool', JSONExtractString(if(event_type = 'unprotected-grant', value, prev_value), 'lock'), substring(key, length({holdPrefix:String}) + 1)) AS lock,
               if(op = 'spool', JSONExtractString(value, 'grantId'), '') AS spool_id
        FROM {db:Identifier}.events FINAL
        PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
            AND (revision = 0 OR (cluster, revision) IN (
                SELECT cluster, end_revision FROM {db:Identifier}.grants
                PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
                    AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                WHERE end_revision > 0))
        WHERE (op = 'delete' AND startsWith(key, {holdPrefix:String})) OR (op = 'spool' AND event_type != 'unprotected-grant')
    )
) AS e ON e.cluster = g.cluster AND e.lock = g.key AND e.grant_revision = g.grant_revision AND e.spool_id = g.spool_id
      AND e.revision = g.end_revision AND e.kind = g.end_kind AND g.timeline >= e.timeline
ASOF LEFT JOIN
(
    -- Ends of the open rows' grants that a restore did not roll back (settled: see the header).
    SELECT cluster, if(op = 'spool', JSONExtractString(if(event_type = 'unprotected-grant', value, prev_value), 'lock'), substring(key, length({holdPrefix:String}) + 1)) AS lock, grant_revision,
           if(op = 'spool', JSONExtractString(value, 'grantId'), '') AS spool_id, timeline, revision, event_type, toUInt8(1) AS found
    FROM {db:Identifier}.events FINAL
    PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
        AND (revision = 0 OR (revision >= (
                -- No open row: no revision (an empty min would be 0, every revision).
                SELECT ifNull(minOrNull(grant_revision), 18446744073709551615) FROM {db:Identifier}.grants FINAL
                PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
                    AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                WHERE end_kind = '' AND grant_revision > 0)
            AND key IN (
                SELECT concat({holdPrefix:String}, key) FROM {db:Identifier}.grants FINAL
                PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
                    AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                WHERE end_kind = '' AND grant_revision > 0)))
    WHERE ((op = 'delete' AND startsWith(key, {holdPrefix:String}) AND event_type IN ('release', 'expiry', 'force-release', 'session-close', 'epoch-release', 'deleted'))
           OR (op = 'spool' AND event_type != 'unprotected-grant'))
        AND rolled_back_by = 0
        AND ingested_at < now64(3) - toIntervalMillisecond({settleMs:Int64})
) AS o ON o.cluster = g.cluster AND o.lock = g.key AND o.grant_revision = g.grant_revision AND o.spool_id = g.spool_id AND g.timeline >= o.timeline
LEFT JOIN
(
    SELECT cluster, groupArray((from_revision, to_revision)) AS ranges FROM {db:Identifier}.gaps FINAL GROUP BY cluster
) AS gp ON gp.cluster = g.cluster
WHERE problem != ''
ORDER BY cluster, key, g.grant_revision, spoolId, timeline
LIMIT {limit:UInt32}
