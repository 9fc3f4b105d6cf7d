-- 110: a deposed tailer leader's rows never replace its successor's (issue 21
-- item 6). events was ReplacingMergeTree(ingested_at) and grants (and
-- grants_by_holder) ReplacingMergeTree(row_version): the last insert won, so a
-- leader that lost its lease and kept draining (up to a batch delay and a
-- retry backoff later) could replace its successor's rows — a classification
-- that depends on process state (the lease witness) flipped after alerts went
-- out. Now every row carries `term`: the leadership term of the tailer that
-- wrote it (the create revision of its campaign key in etcd's election:
-- strictly higher for every later leader; 0 for rows written before this
-- migration and for writers outside the tailer). The replacing version
-- becomes the MATERIALIZED column `replace_version`:
--   events:                        (term, ingested_at)  — term first
--   grants, grants_by_holder:      (row_version, term)  — a closed row still
--                                  wins over an open one; of two rows with the
--                                  same end, the higher term's
-- packed as term × 2^64 + ms / row_version × 2^64 + term (UInt128). A version
-- column cannot be altered, so each table is rebuilt: a *_fenced twin with the
-- new engine (same columns, keys and indices) gets every part of the old table
-- by ATTACH PARTITION … FROM (hard links: no copy of the data, the old table
-- keeps its own), and 111 renames the twins into place. Readers are
-- unchanged: they read with FINAL, which now keeps the highest term's row.
-- Writers stamp `term` (tailer/rowWriter.ts) and the restore marks keep the
-- higher of the row's and the marking leader's term (tailer/sql/mark*.sql).
-- Checkpoints carry term and timeline too: checkpoints_fenced keeps, per
-- cluster and timeline, the highest term's highest checkpoint (a deposed
-- leader's late row neither counts over its successor's nor for the next
-- timeline). Gaps record the term of the leader that recorded them.
-- Run with the tailers stopped (every process migrates at start, before its
-- roles): a row inserted into the old table between its ATTACH here and the
-- rename in 111 would stay behind in *_unfenced.
-- Parameters: {db:Identifier}, and {db:Name} where ClickHouse binds no
-- parameter (the source table of AS and ATTACH … FROM: the migration runner
-- spells the validated name in). Every statement is idempotent (IF NOT EXISTS;
-- an ATTACH that runs twice attaches the rows twice: identical rows, which
-- FINAL collapses).

ALTER TABLE {db:Identifier}.events
    ADD COLUMN IF NOT EXISTS term UInt64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS replace_version UInt128 MATERIALIZED bitShiftLeft(toUInt128(term), 64) + toUInt128(toUnixTimestamp64Milli(ingested_at));

ALTER TABLE {db:Identifier}.grants
    ADD COLUMN IF NOT EXISTS term UInt64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS replace_version UInt128 MATERIALIZED bitShiftLeft(toUInt128(row_version), 64) + toUInt128(term);

ALTER TABLE {db:Identifier}.grants_by_holder
    ADD COLUMN IF NOT EXISTS term UInt64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS replace_version UInt128 MATERIALIZED bitShiftLeft(toUInt128(row_version), 64) + toUInt128(term);

CREATE TABLE IF NOT EXISTS {db:Identifier}.events_fenced AS {db:Name}.events
ENGINE = ReplacingMergeTree(replace_version)
PRIMARY KEY (cluster, revision, key)
ORDER BY (cluster, revision, key, timeline);

CREATE TABLE IF NOT EXISTS {db:Identifier}.grants_fenced AS {db:Name}.grants
ENGINE = ReplacingMergeTree(replace_version)
PRIMARY KEY (cluster, key, grant_revision, spool_id)
ORDER BY (cluster, key, grant_revision, spool_id, timeline);

CREATE TABLE IF NOT EXISTS {db:Identifier}.grants_by_holder_fenced AS {db:Name}.grants_by_holder
ENGINE = ReplacingMergeTree(replace_version)
PRIMARY KEY (holder, granted_at, cluster, key, grant_revision, spool_id)
ORDER BY (holder, granted_at, cluster, key, grant_revision, spool_id, timeline);

ALTER TABLE {db:Identifier}.events_fenced ATTACH PARTITION ID 'all' FROM {db:Name}.events;

ALTER TABLE {db:Identifier}.grants_fenced ATTACH PARTITION ID 'all' FROM {db:Name}.grants;

ALTER TABLE {db:Identifier}.grants_by_holder_fenced ATTACH PARTITION ID 'all' FROM {db:Name}.grants_by_holder;

ALTER TABLE {db:Identifier}.checkpoints
    ADD COLUMN IF NOT EXISTS term UInt64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS timeline UInt32 DEFAULT 0;

-- Per cluster and timeline (the writer's etcd_timelines.timeline), the
-- checkpoint of the highest term, its highest revision: a merge keeps it.
-- Read by grants/checkpointInEffect.sql. Rows written before this
-- migration are term 0 of timeline 0.
CREATE TABLE IF NOT EXISTS {db:Identifier}.checkpoints_fenced
(
    cluster     LowCardinality(String),
    timeline    UInt32,
    term        UInt64,
    revision    UInt64,
    leader      String,
    updated_at  DateTime64(3, 'UTC'),
    replace_version UInt128 MATERIALIZED bitShiftLeft(toUInt128(term), 64) + toUInt128(revision)
)
ENGINE = ReplacingMergeTree(replace_version)
ORDER BY (cluster, timeline);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.checkpoints_fenced_mv TO {db:Identifier}.checkpoints_fenced AS
SELECT cluster, timeline, term, revision, leader, updated_at
FROM {db:Identifier}.checkpoints;

INSERT INTO {db:Identifier}.checkpoints_fenced (cluster, timeline, term, revision, leader, updated_at)
SELECT cluster, 0, 0, max(revision), argMax(leader, revision), max(updated_at)
FROM {db:Identifier}.checkpoints_highest
GROUP BY cluster;

ALTER TABLE {db:Identifier}.gaps ADD COLUMN IF NOT EXISTS term UInt64 DEFAULT 0;
