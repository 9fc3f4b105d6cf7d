-- The last captured change at or before a revision of every lock class and
-- of /sys/epoch; a class whose last change is a delete is dropped. Few rows:
-- classes are configuration.
-- Parameters: {db:Identifier} {cluster:String} {revision:UInt64} {classPrefix:String} {epochKey:String}
SELECT key, revision, event_type, epoch, value
FROM
(
    SELECT key, revision, op, event_type, epoch, value
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String}
        AND revision <= {revision:UInt64}
        AND op IN ('put', 'delete')
        AND (startsWith(key, {classPrefix:String}) OR key = {epochKey:String})
    ORDER BY key, revision DESC
    LIMIT 1 BY key
)
WHERE op != 'delete'
ORDER BY key
