-- The reason markers and force records written at some revisions: they say
-- who ended a hold (release, session close, epoch advance, force-release).
-- Only the rows of etcd timeline {timeline} (sql/065).
-- Parameters: {db:Identifier} {cluster:String} {revisions:Array(UInt64)} {timeline:UInt32}
SELECT revision, key, event_type, value
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String}
    AND revision IN {revisions:Array(UInt64)}
    AND op = 'put'
    AND event_type IN ('marker', 'force-record')
    AND timeline <= {timeline:UInt32} AND (superseded_by = 0 OR superseded_by > {timeline:UInt32})  -- timeline {timeline}'s rows (sql/065)
ORDER BY revision, key
