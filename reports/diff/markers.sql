-- The reason markers and force records written at some revisions: they say
-- who ended a hold (release, session close, epoch advance, force-release).
-- Parameters: {db:Identifier} {cluster:String} {revisions:Array(UInt64)}
SELECT revision, key, event_type, value
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String}
    AND revision IN {revisions:Array(UInt64)}
    AND op = 'put'
    AND event_type IN ('marker', 'force-record')
ORDER BY revision, key
