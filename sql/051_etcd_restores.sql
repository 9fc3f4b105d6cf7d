-- 051: etcd restores seen by the tailer (docs/architecture.md, restores), and the captured
-- history they rolled back.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

-- One row per timeline of a cluster's etcd: generation 0 is the first one the
-- tailer saw (its cluster id); each restore the tailer detects adds the next
-- generation. resume_revision is where capture of the restored cluster starts:
-- a checkpoint written before detected_at belongs to the old timeline and no
-- longer counts (checkpoints only move forward within one generation).
CREATE TABLE IF NOT EXISTS {db:Identifier}.etcd_timelines
(
    cluster              LowCardinality(String),
    generation           UInt32,
    cluster_id           String,
    previous_cluster_id  String,
    previous_checkpoint  UInt64,   -- the old timeline's checkpoint when the restore was seen
    restored_head        UInt64,   -- etcd's head revision when it was seen
    diverged_after       UInt64,   -- the last revision both timelines share; captured revisions above it were rolled back
    resume_revision      UInt64,
    reason               String,
    detected_at          DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(detected_at)
ORDER BY (cluster, generation);

-- Captured events of a rolled-back timeline, moved out of `events` so the
-- restored cluster's own revisions (which reuse the same numbers) can be
-- captured there. Kept, never deleted: they happened, and then etcd forgot.
CREATE TABLE IF NOT EXISTS {db:Identifier}.rolled_back_events
(
    generation      UInt32,        -- the restore (etcd_timelines.generation) that rolled it back
    cluster         LowCardinality(String),
    revision        UInt64,
    key             String,
    event_type      LowCardinality(String),
    holder          String,
    token           UInt64,
    grant_revision  UInt64,
    wall_time       DateTime64(3, 'UTC'),
    value           String,
    prev_value      String,
    rolled_back_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(rolled_back_at)
ORDER BY (cluster, generation, revision, key);

-- Gaps say why: 'compaction' (history compacted before capture) or 'restore'
-- (etcd rewound; the restore's generation and both cluster ids beside it).
-- history_lost = 0: a restore whose restored history is all readable; the
-- range is the old timeline's rolled-back revisions, and grants the restored
-- cluster makes inside it are captured with their start.
ALTER TABLE {db:Identifier}.gaps
    ADD COLUMN IF NOT EXISTS kind LowCardinality(String) DEFAULT 'compaction',
    ADD COLUMN IF NOT EXISTS history_lost UInt8 DEFAULT 1,
    ADD COLUMN IF NOT EXISTS generation UInt32 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS previous_cluster_id String DEFAULT '',
    ADD COLUMN IF NOT EXISTS cluster_id String DEFAULT '';
