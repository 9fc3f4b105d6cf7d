-- The grant rows of grant and end events already durable above the
-- checkpoint when history after it is lost (a gap or a restore from
-- {checkpoint}). The sink writes a batch's events, then its grants: a run
-- killed between the two left events without their grant rows, which the
-- next run rewrites by replaying from the checkpoint — unless etcd compacted
-- (or lost) that history first. Then nothing replays them and the grants
-- stayed missing for good (30-minute chaos run, seed 7: 482 grants of one
-- batch, killed mid-write before a compaction; found by the export's grants
-- check). Each row is the decoder's (tailer/decode/decoder.ts grantRow) from the
-- event's own columns: a put opens its grant (its time is the grant's), a
-- hold's delete closes it (the grant's time from the previous value; start
-- known when the current history's store holds the grant's put, or when it
-- is at or below the checkpoint outside every recorded gap ({gapFrom}, {gapTo}) of the
-- timeline — a bumped restore's gap lies below the checkpoint: a grant in it
-- that the restored etcd held was never captured in this timeline (seed 46)).
-- Rows that exist are written again identical (ReplacingMergeTree: one row).
-- Only timeline {timeline}'s events in ({checkpoint}, {upTo}]; each row the
-- repairing leader's ({term}, sql/110).
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32} {checkpoint:UInt64} {upTo:UInt64} {holdPrefix:String} {term:UInt64} {gapFrom:Array(String)} {gapTo:Array(String)} (revisions, as text)
INSERT INTO {db:Identifier}.grants
    (cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
     end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, timeline, term, origin)
SELECT cluster, substring(key, length({holdPrefix:String}) + 1), namespace, lock_path, class, holder, session, token, epoch, grant_revision, '',
       granted, wait_ms, kind, if(is_end, revision, 0), if(is_end, wall_time, NULL), if(is_end, time_error_ms, 0),
       if(is_end, greatest(0, toUnixTimestamp64Milli(wall_time) - toUnixTimestamp64Milli(granted)), NULL), unprotected,
       if(NOT is_end OR put_found
           OR (grant_revision <= {checkpoint:UInt64} AND NOT arrayExists((f, t) -> grant_revision >= toUInt64(f) AND grant_revision <= toUInt64(t), {gapFrom:Array(String)}, {gapTo:Array(String)})), 1, 0),
       if(is_end, revision, 0), timeline, {term:UInt64}, origin
FROM
(
    SELECT *, op = 'delete' AS is_end,
           transform(event_type, ['release', 'expiry', 'force-release', 'session-close', 'epoch-release', 'deleted'],
                     ['release', 'expiry', 'force', 'session-close', 'epoch-advance', 'deleted'], '') AS kind,
           -- An end's grant time is its put's, as captured (a foreign hold's is not the `at` it claims:
           -- tailer/decode/foreignGrantTimes.ts); the previous value's `at` only when the put is not in the store.
           if(op = 'delete', if(put_found, put_at, fromUnixTimestamp64Milli(JSONExtractInt(prev_value, 'at'), 'UTC')), wall_time) AS granted
    FROM
    (
        SELECT * FROM {db:Identifier}.events FINAL
        WHERE cluster = {cluster:String} AND timeline = {timeline:UInt32} AND revision > {checkpoint:UInt64} AND revision <= {upTo:UInt64}
          AND startsWith(key, {holdPrefix:String})
          AND ((event_type = 'grant' AND op = 'put') OR (op = 'delete' AND grant_revision > 0 AND event_type IN ('release', 'expiry', 'force-release', 'session-close', 'epoch-release', 'deleted')))
    ) AS e
    LEFT JOIN
    (
        -- The puts of the ends' grants the current history still holds: of this timeline, or of an earlier one a
        -- restore carried them from (not rolled back; the latest). A put a restore rolled back starts nothing here.
        -- FINAL: a restore marks rolled-back rows by writing them again.
        SELECT key AS put_key, revision AS put_revision, argMax(wall_time, timeline) AS put_at, 1 AS put_found
        FROM {db:Identifier}.events FINAL
        WHERE cluster = {cluster:String} AND timeline <= {timeline:UInt32} AND event_type = 'grant' AND op = 'put' AND rolled_back_by = 0
          AND timeline >= (
              -- The first timeline of the current history: a restore sharing nothing began a new one (sql/065).
              SELECT ifNull(max(generation), 0) FROM {db:Identifier}.etcd_timelines FINAL
              WHERE cluster = {cluster:String} AND shares_history = 0 AND generation > 0 AND generation <= {timeline:UInt32})
          AND (key, revision) IN (
              SELECT key, grant_revision FROM {db:Identifier}.events
              WHERE cluster = {cluster:String} AND timeline = {timeline:UInt32} AND revision > {checkpoint:UInt64} AND revision <= {upTo:UInt64}
                AND op = 'delete' AND grant_revision > 0 AND startsWith(key, {holdPrefix:String}))
        GROUP BY key, revision
    ) AS p ON p.put_key = e.key AND p.put_revision = e.grant_revision
)
SETTINGS join_use_nulls = 0
