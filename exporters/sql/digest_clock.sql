-- What the digest worker needs to know which periods are sealed: the
-- cluster's checkpoint and, among the captured /sys/clock writes (the
-- tailer's heartbeat, revision at or below the checkpoint; only the proven
-- puts, timed by their own value — not a delete, not one written around the
-- tailer without its proof (core/proof.ts), nor its unsigned first put, all
-- of which are foreign or bracketed) made since {sinceMs}, how many there are,
-- the oldest and the newest wall time. A period is sealed once a captured
-- clock write is at least settleSeconds past its end. A clock write dated
-- after {notAfterMs} (the reader's own clock plus its tolerance) is no
-- boundary at all: it is counted apart (ahead*), so one row from the future —
-- a tailer host whose clock jumped, or a row written into the store — never
-- seals a period that has not happened. The wall_time skip index (sql/100)
-- keeps {sinceMs} cheap.
-- Parameters: {db:Identifier} {cluster:String} {sinceMs:Int64} {notAfterMs:Int64}
WITH (SELECT max(revision) FROM {db:Identifier}.checkpoints_highest WHERE cluster = {cluster:String}) AS cp
SELECT toString(countIf(ms <= {notAfterMs:Int64})) AS clocks,
       toString(minIf(ms, ms <= {notAfterMs:Int64})) AS firstMs,
       toString(maxIf(ms, ms <= {notAfterMs:Int64})) AS newestMs,
       toString(countIf(ms > {notAfterMs:Int64})) AS aheadClocks,
       toString(maxIf(ms, ms > {notAfterMs:Int64})) AS aheadNewestMs,
       toString(argMaxIf(revision, ms, ms > {notAfterMs:Int64})) AS aheadRevision
FROM
(
    SELECT toUnixTimestamp64Milli(wall_time) AS ms, revision
    FROM {db:Identifier}.events
    WHERE cluster = {cluster:String} AND event_type = 'clock' AND op = 'put' AND origin != 'foreign' AND time_estimated = 0 AND revision > 0 AND revision <= cp
        AND wall_time >= fromUnixTimestamp64Milli({sinceMs:Int64}, 'UTC')
)
