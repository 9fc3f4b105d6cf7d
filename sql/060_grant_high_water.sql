-- 060: the highest fencing token the lock API ever granted, per cluster, as
-- captured (issue 21 item 5). Sealing relied on each API process's own
-- high-water file, so a new replica or a fresh container after a same-id
-- etcd restore granted tokens below ones already issued. This table is the
-- high-water every API process can find: the lock engine seeds its mark from
-- it (lock/sharedHighWater.ts), so a restored etcd whose revisions are below
-- a captured grant of the same epoch (or whose /sys/epoch is below a captured
-- grant's epoch) is sealed.
-- Why a table fed by a materialized view rather than a max over `events`:
-- a restore moves the rolled-back events out of `events` (and drops their
-- grant rows), and those are exactly the tokens a new process must stay
-- above; the view counts every API grant when it is first inserted, so what
-- a restore moves later still counts. max is idempotent: replays, and a fill
-- that runs again, change nothing. Only grants carrying the API's proof of
-- origin count (origin 'api', a put, not unprotected): a foreign hold put by
-- hand is no token the API issued, and counting it would seal the API.
-- The fill takes what `events` holds now, and the grants a restore already
-- moved to rolled_back_events whose value carries a MAC (that table has no
-- origin column; a hand-put hold usually carries none).
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS; max).

CREATE TABLE IF NOT EXISTS {db:Identifier}.grant_high_water
(
    cluster  LowCardinality(String),
    token    SimpleAggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree
ORDER BY cluster;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.grant_high_water_mv TO {db:Identifier}.grant_high_water AS
SELECT cluster, max(token) AS token
FROM {db:Identifier}.events
WHERE event_type = 'grant' AND op = 'put' AND origin = 'api' AND unprotected = 0
GROUP BY cluster;

INSERT INTO {db:Identifier}.grant_high_water
SELECT cluster, max(token) AS token
FROM {db:Identifier}.events
WHERE event_type = 'grant' AND op = 'put' AND origin = 'api' AND unprotected = 0
GROUP BY cluster;

INSERT INTO {db:Identifier}.grant_high_water
SELECT cluster, max(token) AS token
FROM {db:Identifier}.rolled_back_events
WHERE event_type = 'grant' AND JSONHas(value, 'mac')
GROUP BY cluster;
