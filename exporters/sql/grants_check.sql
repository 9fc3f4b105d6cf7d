-- The grants an export holds, each checked against the events it was derived
-- from (issue 25 F7: digests hash `events`; the tailer derives `grants` from
-- them, and exports read `grants`). A row is vouched for only when:
--   it has its start event, of its own timeline — or of an earlier one whose
--     grant the row's timeline carried (a restore that shares history,
--     diverging at or above the grant revision): the hold's put or spool line
--     when its start is known, a gap snapshot holding it when not (a put is
--     preferred over a snapshot of the same grant); or, start unknown, its grant
--     revision lies in a recorded gap and it ended by an end event, which then
--     vouches for it (its put was lost in the gap, its end captured);
--   it agrees with that event in every column the event carries (namespace,
--     path, class, holder, session, token, epoch, wait, origin, unprotected:
--     compared by hash here, named by grantsCheck.ts) and in its grant time,
--     and in its rollback mark (a snapshot-started row may be unmarked);
--   no other row of the export has the same start event (one grant, one row);
--   when it ended, its end event — the hold's delete or the spool's end line
--     at its end revision, of its end kind, in its own timeline and rolled
--     back with it — agrees in those columns, the end time and its error
--     bound; when it ended 'unknown' (closed in a gap), its end revision lies
--     between its grant and a recorded gap's end (the row's version), and the
--     gap's snapshot does not hold it; its duration is its end less its grant
--     time (never negative, but for an 'unknown' end estimated before a
--     future-dated grant time);
--   when it is open or ended 'unknown', no end of it is in the events of its
--     timeline, rolled back as it is (an end ingested in the last {settleMs}
--     ms does not judge yet: the tailer writes a batch's events before its
--     grants).
-- The export's own filter picks the rows (its endKind bound '' by the caller:
-- a row whose end was altered must not slip out of the check); the window rule
-- is 'granted', so the start events are those timed in [from, to). One row per
-- problem, at most {limit}; `compare` says which event a hash disagreed with
-- (start | end), named by `eventRevision`, `eventKey` and `eventTimeline`.
-- Joins go by a 64-bit hash of the grant's identity (cluster, lock, grant
-- revision, spool id): string keys made the check 15 s over 1 M grants.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {holdPrefix:String} {settleMs:Int64} {durableKeys:Array(String)} {durableRevisions:Array(UInt64)} {sealedBeforeMs:Int64} {limit:UInt32}
WITH (
    SELECT (ifNull(minOrNull(grant_revision), 18446744073709551615), max(end_revision), ifNull(minOrNull(grant_revision), 18446744073709551615), max(grant_revision))
    FROM {db:Identifier}.grants
    PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
        AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        AND
-- @include grants/filterEvents.sql
) AS ends
SELECT cluster, key, grantRevision, spoolId, timeline, problem, compare, eventRevision, eventKey, eventTimeline
FROM
(
    SELECT g.cluster AS cluster, g.key AS key, toString(g.grant_revision) AS grantRevision, g.spool_id AS spoolId, g.timeline AS timeline,
           -- The start: the put of the row's timeline or the latest before it, else the first snapshot of the latest
           -- timeline up to the row's that has one.
           -- Only the row's own timeline's events count, or an earlier timeline's whose grant the row's timeline carried
           -- (a restore sharing history, diverging at or above the grant): a grant a restore rolled back that the
           -- restored etcd still held starts again, unknown, in the new timeline's snapshot.
           tl.found = 1 AND tl.shares_history = 1 AND g.grant_revision <= tl.diverged_after AS carried,
           arrayFilter(x -> x.1 <= g.timeline, arrayConcat(st.puts, st.snaps)) AS candidates,
           arrayFilter(x -> x.1 = g.timeline OR x.1 < g.timeline AND carried, st.puts) AS put_candidates,
           arrayFilter(x -> x.1 = g.timeline OR x.1 < g.timeline AND carried, st.snaps) AS snap_candidates,
           length(put_candidates) > 0 AS by_put,
           if(by_put, put_candidates[-1], arrayFirst(x -> x.1 = snap_candidates[-1].1, snap_candidates)) AS chosen,
           multiIf(NOT by_put, 'snapshot-hold', g.spool_id = '', 'grant', 'unprotected-grant') AS st_type,
           chosen.2 AS st_revision,
           chosen.1 AS st_timeline,
           if(g.spool_id = '' OR NOT by_put, concat({holdPrefix:String}, g.key), concat('/spool/', g.spool_id)) AS st_key,
           chosen.5 AS st_h,
           chosen.4 AS st_at_ms,
           chosen.3 AS st_marked,
           toUnixTimestamp64Milli(g.granted_at) AS granted_ms,
           toUnixTimestamp64Milli(assumeNotNull(g.ended_at)) AS ended_ms,
           -- Rows sharing one start event: one grant shown twice (a forged copy in another timeline).
           count() OVER (PARTITION BY g.k, st_timeline) AS rows_of_start,
           -- A grant whose put fell in a recorded gap and whose hold ended before the gap's snapshot (a run killed mid
           -- catch-up left its end durable, not its put: 30-minute chaos run, seed 46) has no start event; its row,
           -- start unknown, rests on its end event instead, which the end checks below hold it to.
           g.start_known = 0 AND empty(candidates) AND g.end_kind NOT IN ('', 'unknown')
               AND arrayExists(r -> r.1 <= g.grant_revision AND g.grant_revision <= r.2, gp.ranges) AS by_end,
           multiIf(
               empty(candidates) AND NOT by_end, 'no start event (hold put, gap snapshot or spool line) in events',
               empty(put_candidates) AND empty(snap_candidates) AND NOT by_end,
                   concat('in timeline ', toString(g.timeline), ', but its start event is of timeline ', toString(arrayMax(x -> x.1, candidates)), ' and no restore carried it there'),
               g.start_known = 1 AND NOT by_put, 'start known, but no hold put or spool line of it in events (only a gap snapshot)',
               g.start_known = 0 AND empty(snap_candidates) AND NOT by_end, 'start unknown, but no gap snapshot in events holds it',
               NOT by_end AND (st_h != g.h OR st_at_ms != granted_ms), concat('differs from its start event (', st_type, ' at revision ', toString(st_revision), ')'),
               NOT by_end AND g.rolled_back_by != st_marked AND (by_put OR g.rolled_back_by > 0),
                   concat('rolled back by generation ', toString(g.rolled_back_by), ' but its start event (', st_type, ' at revision ', toString(st_revision), ') by ', toString(st_marked)),
               rows_of_start > 1, concat('shown ', toString(rows_of_start), ' times: other rows of the export have the same start event (', st_type, ' at revision ', toString(st_revision), ', timeline ', toString(st_timeline), ')'),
               g.end_kind = '' AND (g.end_revision != 0 OR g.ended_at IS NOT NULL OR g.duration_ms IS NOT NULL), 'open (no end kind) but carries an end',
               g.end_kind IN ('', 'unknown') AND o.found = 1,
                   concat(if(g.end_kind = '', 'open', 'ended unknown'), ', but its end is in events (at revision ', toString(o.first_end), ')'),
               g.end_kind = 'unknown' AND NOT arrayExists(r -> r.1 <= g.row_version AND g.row_version <= r.2, gp.ranges),
                   'ended unknown (in a gap) outside every recorded gap of its cluster',
               g.end_kind = 'unknown' AND (g.end_revision < g.grant_revision OR g.end_revision > g.row_version),
                   concat('ended unknown at revision ', toString(g.end_revision), ', outside its grant revision .. its gap''s end ', toString(g.row_version)),
               g.end_kind = 'unknown' AND arrayExists(x -> x.1 = g.timeline AND x.2 = g.row_version, st.snaps),
                   concat('ended unknown in the gap ending at ', toString(g.row_version), ', but that gap''s snapshot holds it'),
               g.end_kind != '' AND (g.ended_at IS NULL OR g.duration_ms IS NULL
                   OR NOT (assumeNotNull(g.duration_ms) = greatest(0, ended_ms - granted_ms) OR g.end_kind = 'unknown' AND assumeNotNull(g.duration_ms) = ended_ms - granted_ms)),
                   'its duration is not its end time less its grant time',
               g.end_kind NOT IN ('', 'unknown') AND e.found = 0,
                   concat('ended ', g.end_kind, ' at revision ', toString(g.end_revision), ': no such end event of its timeline in events'),
               g.end_kind NOT IN ('', 'unknown') AND (e.h != g.h OR e.at_ms != ended_ms OR e.error_ms != g.ended_at_error_ms),
                   concat('differs from its end event (', g.end_kind, ' at revision ', toString(g.end_revision), ')'),
               '') AS problem,
           multiIf(problem LIKE 'differs from its start event%', 'start', problem LIKE 'differs from its end event%', 'end', '') AS compare,
           toString(if(compare = 'end', e.revision, st_revision)) AS eventRevision,
           -- A spool end line's key is its own id: '' lets grants_check_detail.sql find it by the grant's.
           if(compare = 'end', if(g.spool_id = '', concat({holdPrefix:String}, g.key), ''), st_key) AS eventKey,
           if(compare = 'end', e.timeline, st_timeline) AS eventTimeline
    FROM
    (
        SELECT cluster, key, grant_revision, spool_id, timeline, start_known, rolled_back_by, granted_at, end_kind, end_revision, ended_at,
               ended_at_error_ms, duration_ms, row_version,
               cityHash64(namespace, lock_path, class, holder, session, token, epoch, wait_ms, origin, unprotected) AS h,
               cityHash64(cluster, key, grant_revision, spool_id) AS k
        FROM
        (
            SELECT *
            FROM {db:Identifier}.grants FINAL
            PREWHERE
-- @include grants/filterPrewhere.sql
            WHERE
-- @include grants/filterWhere.sql
        )
    ) AS g
    LEFT JOIN
    (
        -- Start events per grant, every timeline's: puts and spool lines, and gap snapshots holding it, each as
        -- (timeline, revision, rollback mark, time, hash of its columns), sorted by timeline (then revision).
        SELECT k,
               arraySort(x -> (x.1, x.2), groupArrayIf((timeline, revision, rolled_back_by, at_ms, eh), op != 'snapshot')) AS puts,
               arraySort(x -> (x.1, x.2), groupArrayIf((timeline, revision, rolled_back_by, at_ms, eh), op = 'snapshot')) AS snaps
        FROM
        (
            SELECT op, timeline, revision, rolled_back_by, toUnixTimestamp64Milli(wall_time) AS at_ms,
                   cityHash64(cluster, if(op = 'spool', JSONExtractString(value, 'lock'), substring(key, length({holdPrefix:String}) + 1)), grant_revision,
                              if(op = 'spool', substring(key, 8), '')) AS k,
                   cityHash64(namespace, lock_path, class, holder, session, token, epoch, wait_ms, origin, unprotected) AS eh
            FROM {db:Identifier}.events FINAL
            PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
                AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                AND event_type IN ('grant', 'snapshot-hold', 'unprotected-grant')
                AND
-- @include grants/filterEvents.sql
            WHERE (event_type = 'grant' AND op = 'put') OR (event_type = 'snapshot-hold' AND op = 'snapshot') OR (event_type = 'unprotected-grant' AND op = 'spool')
        )
        GROUP BY k
    ) AS st ON st.k = g.k
    LEFT JOIN
    (
        -- The restores that started each timeline (timeline = generation since sql/065).
        SELECT cluster, timeline, argMax(diverged_after, generation) AS diverged_after, argMax(shares_history, generation) AS shares_history, toUInt8(1) AS found
        FROM {db:Identifier}.etcd_timelines FINAL
        WHERE generation > 0
        GROUP BY cluster, timeline
    ) AS tl ON tl.cluster = g.cluster AND tl.timeline = g.timeline
    LEFT JOIN
    (
        -- End events of the rows that ended: hold deletes at their end revisions, spool end lines (revision 0).
        SELECT cityHash64(cluster, if(op = 'spool', JSONExtractString(prev_value, 'lock'), substring(key, length({holdPrefix:String}) + 1)), grant_revision,
                          if(op = 'spool', JSONExtractString(value, 'grantId'), '')) AS k, revision, timeline, rolled_back_by,
               -- The end kind it names (core/events.ts END_KIND_BY_EVENT), as a number: strings made the join slow.
               cityHash64(transform(event_type, ['release', 'expiry', 'force-release', 'session-close', 'epoch-release', 'deleted'],
                                    ['release', 'expiry', 'force', 'session-close', 'epoch-advance', 'deleted'], '')) AS kind,
               toUnixTimestamp64Milli(wall_time) AS at_ms, time_error_ms AS error_ms,
               cityHash64(namespace, lock_path, class, holder, session, token, epoch, wait_ms, origin, unprotected) AS h, toUInt8(1) AS found
        FROM {db:Identifier}.events FINAL
        -- Ranges, not sets (a set of every end revision made this the check's slowest part): the revisions from the
        -- window's first grant to its last end, the grant revisions of the window's grants.
        PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
            AND (revision = 0 OR revision BETWEEN ends.1 AND ends.2 AND grant_revision BETWEEN ends.3 AND ends.4)
            AND
-- @include grants/filterEvents.sql
        WHERE (op = 'delete' AND startsWith(key, {holdPrefix:String})) OR (op = 'spool' AND event_type != 'unprotected-grant')
    ) AS e ON e.k = g.k AND e.revision = g.end_revision AND e.kind = cityHash64(g.end_kind) AND e.timeline = g.timeline AND e.rolled_back_by = g.rolled_back_by
    LEFT JOIN
    (
        -- Ends of the open (or 'unknown') rows' grants, settled (see the header).
        SELECT cityHash64(cluster, if(op = 'spool', JSONExtractString(prev_value, 'lock'), substring(key, length({holdPrefix:String}) + 1)), grant_revision,
                          if(op = 'spool', JSONExtractString(value, 'grantId'), '')) AS k, timeline, rolled_back_by,
               min(revision) AS first_end, toUInt8(1) AS found
        FROM {db:Identifier}.events FINAL
        PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
            AND (revision = 0 OR (revision >= (
                    -- No such row: no revision (an empty min would be 0, every revision).
                    SELECT ifNull(minOrNull(grant_revision), 18446744073709551615) FROM {db:Identifier}.grants FINAL
                    PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
                        AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                    WHERE end_kind IN ('', 'unknown') AND grant_revision > 0)
                AND key IN (
                    SELECT concat({holdPrefix:String}, key) FROM {db:Identifier}.grants FINAL
                    PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
                        AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                    WHERE end_kind IN ('', 'unknown') AND grant_revision > 0)))
            AND
-- @include grants/filterEvents.sql
        WHERE ((op = 'delete' AND startsWith(key, {holdPrefix:String}) AND event_type IN ('release', 'expiry', 'force-release', 'session-close', 'epoch-release', 'deleted'))
               OR (op = 'spool' AND event_type != 'unprotected-grant'))
            -- In flight only when ingested within the settle window (never a future ingested_at: no digest hashes it)
            -- and above what the tailer's checkpoint says is durable, grant rows included (a spool line: revision 0).
            -- An event of a period a digest sealed is never in flight (a spool line, revision 0, has no checkpoint).
            AND NOT (ingested_at >= now64(3) - toIntervalMillisecond({settleMs:Int64}) AND ingested_at <= now64(3) + toIntervalSecond(5)
                     AND wall_time >= fromUnixTimestamp64Milli({sealedBeforeMs:Int64}, 'UTC')
                     AND (revision = 0 OR revision > {durableRevisions:Array(UInt64)}[indexOf({durableKeys:Array(String)}, concat(cluster, '/', toString(timeline)))]))
        GROUP BY k, timeline, rolled_back_by
    ) AS o ON o.k = g.k AND o.timeline = g.timeline AND o.rolled_back_by = g.rolled_back_by
    LEFT JOIN
    (
        SELECT cluster, groupArray((from_revision, to_revision)) AS ranges FROM {db:Identifier}.gaps FINAL GROUP BY cluster
    ) AS gp ON gp.cluster = g.cluster
)
WHERE problem != ''
ORDER BY cluster, key, toUInt64(grantRevision), spoolId, timeline
LIMIT {limit:UInt32}
