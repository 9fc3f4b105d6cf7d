-- What the digest worker needs to know which periods are sealed: the
-- cluster's checkpoint and, among the captured /sys/clock writes (the
-- tailer's heartbeat, revision at or below the checkpoint; only the proven
-- puts, timed by their own value — not a delete, not one written around the
-- tailer without its proof, core/holdProof.ts, nor its unsigned first put,
-- all of which are foreign or bracketed) made since
-- {sinceMs}, how many there are, the oldest and the newest wall time. A
-- period is sealed once a captured clock write is at least settleSeconds past
-- its end. The wall_time skip index (sql/100) keeps {sinceMs} cheap.
-- Parameters: {db:Identifier} {cluster:String} {sinceMs:Int64}
WITH (SELECT max(revision) FROM {db:Identifier}.checkpoints_highest WHERE cluster = {cluster:String}) AS cp
SELECT toString(count()) AS clocks, toString(min(toUnixTimestamp64Milli(wall_time))) AS firstMs, toString(max(toUnixTimestamp64Milli(wall_time))) AS newestMs
FROM {db:Identifier}.events
WHERE cluster = {cluster:String} AND event_type = 'clock' AND op = 'put' AND origin != 'foreign' AND time_estimated = 0 AND revision > 0 AND revision <= cp
    AND wall_time >= fromUnixTimestamp64Milli({sinceMs:Int64}, 'UTC')
