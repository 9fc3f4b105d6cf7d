-- The revision in force at a wall-clock instant: the newest captured change
-- whose time is at or before it (0 when none is). Estimated times (expiries)
-- count with their estimate.
-- Parameters: {db:Identifier} {cluster:String} {atMs:Int64}
SELECT max(revision) AS revision
FROM {db:Identifier}.events
WHERE cluster = {cluster:String}
    AND op IN ('put', 'delete')
    AND wall_time > '2000-01-01'
    AND wall_time <= fromUnixTimestamp64Milli({atMs:Int64}, 'UTC')
