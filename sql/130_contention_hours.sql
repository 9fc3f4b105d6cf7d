-- 130: contention pre-aggregated per sealed hour (issue 22 item 1). The
-- contention report's cost is exact quantiles and exact distinct holders over
-- every grant of the window; here each hour's grants are aggregated once, as
-- ClickHouse -State values that merge exactly (quantilesExact keeps every
-- value, uniqExact every distinct holder), and the report merges the hours'
-- states (reports/contention/hours.sql). Written only by the sealing job
-- (reports/contention/seal.ts); derived data, rebuilt at will.
--
-- A seal of (cluster, hour) is one attempt with its own increasing seal_id:
-- its rows in contention_hours, contention_handoffs and contention_pending
-- first, then its row in contention_seals. Readers take the newest seal of an
-- hour (contention_seals FINAL) and only the rows with that seal_id, so a
-- re-sealed hour (a replay, a restore, late rows) replaces the old seal's
-- rows and never adds to them, and a seal that died half-written is never
-- read. Old seals' rows stay until dropped by hand (they are never read).
--
-- A seal is used only while its fingerprint still matches the grants of its
-- hour (the highest grant revision and the distinct spool ids granted in it,
-- the cluster's newest restore generation) and no grant of the hour broke
-- time order (irregular = 0); otherwise the report reads that hour raw.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.contention_seals
(
    cluster       LowCardinality(String),
    hour          DateTime('UTC'),
    seal_id       UInt64,                   -- increasing per attempt; the hour's rows below carry it
    max_revision  UInt64,                   -- fingerprint: highest grant_revision granted in the hour
    spool_grants  UInt64,                   -- fingerprint: distinct unprotected grants (spool ids) granted in the hour
    generation    UInt32,                   -- fingerprint: the cluster's newest etcd_timelines generation
    lookback_days UInt32,                   -- how far back the handoffs' window read (≥ the longest report window)
    irregular     UInt64,                   -- grants whose grant time is before an earlier grant's on the key (never read from the seal)
    grants        UInt64,
    pending       UInt64,                   -- grants still held when sealed (their end is read raw)
    checkpoint    UInt64,                   -- the tailer's checkpoint when sealed
    sealed_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(seal_id)
ORDER BY (cluster, hour);

-- Per seal, namespace and class: the grant-time figures over every grant of
-- the hour, the end figures over those ended when sealed (a held grant's
-- duration is NULL and its end_kind '': it adds nothing to them).
CREATE TABLE IF NOT EXISTS {db:Identifier}.contention_hours
(
    cluster         LowCardinality(String),
    hour            DateTime('UTC'),
    seal_id         UInt64,
    namespace       LowCardinality(String),
    class           LowCardinality(String),
    grants          UInt64,
    holders         AggregateFunction(uniqExact, String),
    wait            AggregateFunction(quantilesExact(0.5, 0.95, 0.99), UInt64),
    ended           UInt64,
    hold            AggregateFunction(quantilesExact(0.5, 0.99), Int64),
    expiries        UInt64,
    force_releases  UInt64
)
ENGINE = MergeTree
ORDER BY (cluster, hour, seal_id, namespace, class);

-- One row per handoff of the hour (a protected grant whose previous grant on
-- the key was released, protected too), with the previous grant's grant time:
-- the report counts it when that grant is in its window too, as the raw
-- query's window function does.
CREATE TABLE IF NOT EXISTS {db:Identifier}.contention_handoffs
(
    cluster          LowCardinality(String),
    hour             DateTime('UTC'),
    seal_id          UInt64,
    namespace        LowCardinality(String),
    class            LowCardinality(String),
    pred_granted_at  DateTime64(3, 'UTC'),
    gap_ms           Int64
)
ENGINE = MergeTree
ORDER BY (cluster, hour, seal_id, namespace, class);

-- Grants of the hour still held when sealed: the report reads their end raw.
CREATE TABLE IF NOT EXISTS {db:Identifier}.contention_pending
(
    cluster         LowCardinality(String),
    hour            DateTime('UTC'),
    seal_id         UInt64,
    key             String,
    grant_revision  UInt64,
    spool_id        String,
    timeline        UInt32
)
ENGINE = MergeTree
ORDER BY (cluster, hour, seal_id, key);

-- Per seal and key: the hour's grants of the key, for the report's hottest
-- keys (keys are no dimension of contention_hours: a key's figures are read
-- raw, only for the `top` keys these counts find).
CREATE TABLE IF NOT EXISTS {db:Identifier}.contention_key_hours
(
    cluster         LowCardinality(String),
    hour            DateTime('UTC'),
    seal_id         UInt64,
    namespace       LowCardinality(String),
    class           LowCardinality(String),
    key             String,
    grants          UInt64
)
ENGINE = MergeTree
ORDER BY (cluster, hour, seal_id, namespace, class, key);
