-- The holds a post-gap snapshot saw (at the gap's last revision) under a
-- prefix: what was alive right after the lost history.
-- Only the rows of etcd timeline {timeline} (sql/065).
-- Parameters: {db:Identifier} {cluster:String} {revision:UInt64} {holdPrefix:String} {timeline:UInt32}
SELECT key, revision, event_type, holder, session, token, class, epoch, grant_revision,
       toUnixTimestamp64Milli(wall_time) AS wall_ms, time_estimated
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String}
    AND revision = {revision:UInt64}
    AND op = 'snapshot'
    AND startsWith(key, {holdPrefix:String})
    AND timeline <= {timeline:UInt32} AND (superseded_by = 0 OR superseded_by > {timeline:UInt32})  -- timeline {timeline}'s rows (sql/065)
    AND
-- @include grants/scopeBound.sql
ORDER BY key
