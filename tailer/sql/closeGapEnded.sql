-- Grants captured open up to the snapshot's revision and not held in the
-- snapshot ended inside the gap, how is unknown: a closed row (end_kind
-- 'unknown', row_version = the gap's last revision, so it wins over the open
-- row) with the end bounded by the gap: ended_at mid-way between the last time
-- captured before the gap ({startMs}, or the grant's own time when later) and
-- {nowMs}, ± half that. That includes grants a run captured above the stored
-- checkpoint (durable, the checkpoint held back) — the gap starts at the
-- checkpoint, so they are inside it, yet they are in the store. When the
-- snapshot — or the store — holds a later grant of the same key (granted inside the gap), the
-- old one ended before it: the end revision is below that grant's and the end time not
-- after its `at`, so no report shows two holders at once. (The store's: a try of
-- the same gap killed between its snapshot and this close left that snapshot's
-- holds open; a second compaction then widened the gap, its snapshot no longer
-- held them, and the older grant was closed at the gap's end, overlapping them —
-- 30-minute chaos run, seed 7: 11 overlaps.) Only the current
-- timeline's grants (superseded_by = 0), each closed in its own timeline (sql/065).
-- The closed rows are the closing leader's ({term}, sql/110). Every column that
-- says what the grant was is carried over — origin too: left to its default, a
-- foreign hold closed here read 'api' (30-minute chaos run, seed 7).
-- Parameters: {db:Identifier} {cluster:String} {holdPrefix:String} {gapTo:UInt64} {snapshotRevision:UInt64} {startMs:Int64} {nowMs:Int64} {term:UInt64}
INSERT INTO {db:Identifier}.grants
    (cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
     end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, timeline, term, origin)
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       'unknown',
       if(next_revision = 0, {gapTo:UInt64}, least({gapTo:UInt64}, next_revision - 1)),
       fromUnixTimestamp64Milli(toInt64(lower_ms + intDiv(upper_ms - lower_ms, 2))),
       toUInt32(least(intDiv(upper_ms - lower_ms + 1, 2), 4294967295)),
       -- Never negative: a hold whose own time is ahead of the tailer's clock (a skewed API host) ends at its grant time or after.
       greatest(0, lower_ms + intDiv(upper_ms - lower_ms, 2) - toUnixTimestamp64Milli(granted_at)),
       unprotected, start_known, {gapTo:UInt64}, timeline, {term:UInt64}, origin
FROM (
    SELECT *,
           -- Not before the grant itself (a foreign hold's own time bounds nothing past the upper bound).
           least(upper_ms, greatest({startMs:Int64}, toUnixTimestamp64Milli(granted_at))) AS lower_ms
    FROM (
    SELECT g.*,
           -- The next grant of the key: the snapshot's, or one the store already holds (an earlier snapshot of this gap,
           -- written by a try killed before it closed anything) — whichever comes first.
           arrayFirst(x -> x.1 > g.grant_revision, arraySort(arrayConcat(
               if(s.held_revision > g.grant_revision, [(s.held_revision, s.at_ms)], []),
               g.later))) AS next_grant,
           next_grant.1 AS next_revision,
           if(next_revision > 0, greatest({startMs:Int64}, least({nowMs:Int64}, next_grant.2)), {nowMs:Int64}) AS upper_ms
    FROM (
        SELECT o.*, k.later
        FROM (
            SELECT * FROM {db:Identifier}.grants FINAL
            WHERE cluster = {cluster:String} AND unprotected = 0 AND end_kind = '' AND superseded_by = 0 AND grant_revision <= {snapshotRevision:UInt64}
              AND (concat({holdPrefix:String}, key), grant_revision) NOT IN (
                  SELECT key, grant_revision FROM {db:Identifier}.events
                  WHERE cluster = {cluster:String} AND revision = {snapshotRevision:UInt64} AND event_type = 'snapshot-hold')
        ) AS o
        LEFT JOIN (
            -- Every grant of a key in the store up to the gap's end, per timeline: (revision, grant time ms).
            SELECT key AS later_key, timeline AS later_timeline, groupArray((grant_revision, toUnixTimestamp64Milli(granted_at))) AS later
            FROM {db:Identifier}.grants FINAL
            WHERE cluster = {cluster:String} AND unprotected = 0 AND superseded_by = 0 AND grant_revision <= {gapTo:UInt64}
              -- Only the keys of open grants (a few thousand held locks), not every key the cluster ever had.
              AND key IN (SELECT key FROM {db:Identifier}.grants FINAL
                          WHERE cluster = {cluster:String} AND unprotected = 0 AND end_kind = '' AND superseded_by = 0 AND grant_revision <= {snapshotRevision:UInt64})
            GROUP BY key, timeline
        ) AS k ON k.later_key = o.key AND k.later_timeline = o.timeline
    ) AS g
    LEFT JOIN (
        -- At most one hold per key at the snapshot's revision.
        SELECT key, any(grant_revision) AS held_revision, toUnixTimestamp64Milli(any(wall_time)) AS at_ms FROM {db:Identifier}.events
        WHERE cluster = {cluster:String} AND revision = {snapshotRevision:UInt64} AND event_type = 'snapshot-hold'
        GROUP BY key
    ) AS s ON s.key = concat({holdPrefix:String}, g.key)
    )
)
