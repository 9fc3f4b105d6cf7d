-- The last captured change at or before a revision of every lock class and
-- of /sys/epoch; a class whose last change is a delete is dropped. Few rows:
-- classes are configuration. origin 'foreign': not written by the lock API.
-- Only the rows of etcd timeline {timeline} (sql/065).
-- Parameters: {db:Identifier} {cluster:String} {revision:UInt64} {classPrefix:String} {epochKey:String} {timeline:UInt32}
SELECT key, revision, event_type, epoch, value, toString(origin) AS origin
FROM
(
    SELECT key, revision, op, event_type, epoch, value, origin
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String}
        AND revision <= {revision:UInt64}
        AND op IN ('put', 'delete')
        AND (startsWith(key, {classPrefix:String}) OR key = {epochKey:String})
        AND timeline <= {timeline:UInt32} AND (superseded_by = 0 OR superseded_by > {timeline:UInt32})  -- timeline {timeline}'s rows (sql/065)
    ORDER BY key, revision DESC
    LIMIT 1 BY key
)
WHERE op != 'delete'
ORDER BY key
