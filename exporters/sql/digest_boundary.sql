-- A digest period's end position: the highest (timeline, revision) of a
-- captured /sys/clock write whose wall time is in [sinceMs, beforeMs) (the
-- worker takes the larger of it and the period's start position; no row:
-- no clock write in the period). Only the tailer's proven puts count, as in
-- digest_clock.sql; the worker asks only for periods that ended before its
-- own clock (plus tolerance), so a clock dated ahead of it is never a bound.
-- Parameters: {db:Identifier} {cluster:String} {sinceMs:Int64} {beforeMs:Int64}
SELECT toString(timeline) AS timeline, toString(revision) AS revision
FROM {db:Identifier}.events
WHERE cluster = {cluster:String} AND event_type = 'clock' AND op = 'put' AND origin != 'foreign' AND time_estimated = 0 AND revision > 0
    AND wall_time >= fromUnixTimestamp64Milli({sinceMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC')
ORDER BY timeline DESC, revision DESC
LIMIT 1
SETTINGS prefer_column_name_to_alias = 1
