-- The wall-time span grants_check.sql and grants_check_events.sql have to
-- walk within [from, to): the earliest and latest grant time of the
-- cluster's grants and start events there (exporters/checks/grantsCheck.ts walks it
-- a window at a time; a range of years over a few days of record is a few
-- windows, not thousands). Empty: minMs > maxMs.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64}
SELECT toString(least(g.lo, e.lo)) AS minMs, toString(greatest(g.hi, e.hi)) AS maxMs
FROM
(
    SELECT ifNull(minOrNull(toUnixTimestamp64Milli(granted_at)), 9223372036854775807) AS lo, ifNull(maxOrNull(toUnixTimestamp64Milli(granted_at)), -1) AS hi
    FROM {db:Identifier}.grants
    PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
        AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
) AS g,
(
    SELECT ifNull(minOrNull(toUnixTimestamp64Milli(wall_time)), 9223372036854775807) AS lo, ifNull(maxOrNull(toUnixTimestamp64Milli(wall_time)), -1) AS hi
    FROM {db:Identifier}.events
    PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
        AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        AND event_type IN ('grant', 'snapshot-hold', 'unprotected-grant')
) AS e
