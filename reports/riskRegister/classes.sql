-- The latest definition of every lock class as of a moment: the newest
-- class-change event per class name (/sys/class/<name>), across clusters.
-- argMax over (wall_time, revision) is exact under replays (a replayed event
-- is identical), so no FINAL. A class whose latest event deleted it has op 'delete';
-- origin 'foreign': its latest change was not the lock API's (no proof).
-- Parameters: {db:Identifier} {asOfMs:Int64} {classPrefix:String}
SELECT
    substring(key, length({classPrefix:String}) + 1) AS name,
    argMax(value, (wall_time, revision)) AS value,
    argMax(toString(op), (wall_time, revision)) AS op,
    argMax(toString(origin), (wall_time, revision)) AS origin
FROM {db:Identifier}.events
PREWHERE event_type = 'class-change'
    AND startsWith(key, {classPrefix:String})
    AND wall_time <= fromUnixTimestamp64Milli({asOfMs:Int64}, 'UTC')
GROUP BY name
ORDER BY name
