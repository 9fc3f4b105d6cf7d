-- The force-release records the audit log saw committed (the tailer's
-- `force-record` puts), which the archive must hold. Records newer than
-- {beforeMs} are left out: the archiver may not have written them yet.
-- Empty {cluster} means every cluster.
-- Parameters: {db:Identifier} {cluster:String} {beforeMs:Int64}
SELECT cluster, key, toString(create_revision) AS createRevision, value
FROM {db:Identifier}.events FINAL
PREWHERE event_type = 'force-record' AND op = 'put'
    AND ({cluster:String} = '' OR cluster = {cluster:String})
    AND wall_time < fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC')
ORDER BY cluster, create_revision
