-- The force-release records the audit log saw committed (the tailer's
-- `force-record` puts) with the lock API's proof (origin 'api': a record
-- written by hand is stored foreign and never archived as a genuine one,
-- issue 21), which the archive must hold — and the only ones it may hold.
-- settled = 0 for records newer than {beforeMs}: the archiver may not have
-- written them yet. Empty {cluster} means every cluster.
-- Parameters: {db:Identifier} {cluster:String} {beforeMs:Int64}
SELECT cluster, key, toString(create_revision) AS createRevision, value,
    toUInt8(wall_time < fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC')) AS settled
FROM {db:Identifier}.events FINAL
PREWHERE event_type = 'force-record' AND op = 'put'
    AND ({cluster:String} = '' OR cluster = {cluster:String})
WHERE origin != 'foreign'
ORDER BY cluster, create_revision
