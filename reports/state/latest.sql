-- The last captured change at or before a revision of every hold and queue
-- key under a prefix (events FINAL: exact under replays); keys whose last
-- change is a delete are dropped. Snapshot rows (written after a gap) count
-- as changes at the snapshot revision; spooled (unprotected) grants never
-- were in etcd and are left out.
-- Only the rows of etcd timeline {timeline} (its own and those it shares).
-- Parameters: {db:Identifier} {cluster:String} {revision:UInt64} {holdPrefix:String} {queuePrefix:String} {timeline:UInt32} {limit:UInt32}
SELECT key, revision, event_type, holder, session, token, class, epoch, grant_revision,
       toUnixTimestamp64Milli(wall_time) AS wall_ms, time_estimated
FROM
(
    SELECT key, revision, op, event_type, holder, session, token, class, epoch, grant_revision, wall_time, time_estimated
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String}
        AND revision <= {revision:UInt64}
        AND op IN ('put', 'delete', 'snapshot')
        AND (startsWith(key, {holdPrefix:String}) OR startsWith(key, {queuePrefix:String}))
        AND timeline <= {timeline:UInt32} AND (superseded_by = 0 OR superseded_by > {timeline:UInt32})  -- timeline {timeline}'s rows (sql/065)
        AND
-- @include grants/scopeBound.sql
    ORDER BY key, revision DESC
    LIMIT 1 BY key
)
WHERE op != 'delete'
ORDER BY key
LIMIT {limit:UInt32}
