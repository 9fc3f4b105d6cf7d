-- What the digest worker needs to know which periods are sealed: the
-- cluster's checkpoint and, among the captured /sys/clock writes (the
-- tailer's heartbeat, revision at or below the checkpoint; not one written
-- around it, which carries no proof: core/holdProof.ts) made since
-- {sinceMs}, how many there are, the oldest and the newest wall time. A
-- period is sealed once a captured clock write is at least settleSeconds past
-- its end. The wall_time skip index (sql/100) keeps {sinceMs} cheap.
-- Parameters: {db:Identifier} {cluster:String} {sinceMs:Int64}
WITH (SELECT max(revision) FROM {db:Identifier}.checkpoints_highest WHERE cluster = {cluster:String}) AS cp
SELECT toString(count()) AS clocks, toString(min(toUnixTimestamp64Milli(wall_time))) AS firstMs, toString(max(toUnixTimestamp64Milli(wall_time))) AS newestMs
FROM {db:Identifier}.events
WHERE cluster = {cluster:String} AND event_type = 'clock' AND origin != 'foreign' AND revision > 0 AND revision <= cp
    AND wall_time >= fromUnixTimestamp64Milli({sinceMs:Int64}, 'UTC')
