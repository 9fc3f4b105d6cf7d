-- How many start events (hold puts, gap snapshots holding a grant, fail-open
-- spool lines) of the export's namespace, class and holder each step of
-- {stepMs} ms from `from` holds, in [from, to): exporters/checks/grantsCheck.ts joins
-- consecutive steps into windows within a budget of start events. Every window's queries
-- read the whole `grants` table (granted_at is not in its sort key), so a
-- window per day made a one-namespace check of 90 days 90 full scans; sized
-- by what it holds, it is one. Counted without FINAL: a replayed event counts
-- twice, which only makes a window smaller. Only non-empty steps, in order.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {stepMs:Int64}
SELECT toString(intDiv(toUnixTimestamp64Milli(wall_time) - {fromMs:Int64}, {stepMs:Int64})) AS step, toString(count()) AS starts
FROM {db:Identifier}.events
PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
    AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    AND event_type IN ('grant', 'snapshot-hold', 'unprotected-grant')
    AND
-- @include grants/filterEvents.sql
WHERE (event_type = 'grant' AND op = 'put') OR (event_type = 'snapshot-hold' AND op = 'snapshot') OR (event_type = 'unprotected-grant' AND op = 'spool')
GROUP BY step
ORDER BY toInt64(step)
