-- 160: what a catch-up made durable beyond its checkpoint (issue 22 item 4).
-- A catch-up far behind watches K windows of revisions at once; the
-- checkpoint (a single revision: everything up to it is durable) crosses a
-- window only once every window before it is complete, so a tailer killed
-- mid catch-up kept at most the first window's progress and every restart
-- wrote the other windows' rows again (8 windows: the checkpoint pinned while
-- 170 000 events were written for 83 500). Each row here says: every change
-- of timeline {timeline} in [from_revision, through] is durable — one window's
-- start and its durable floor, written by the leader's checkpoint writer (after
-- the same fence as the checkpoint). A restart plans its windows over the holes
-- between the checkpoint and these intervals only (tailer/catchUpSegments.ts);
-- an interval at or below the checkpoint says nothing new. A window's floor
-- only grows: the row of the highest `through` wins per start.
-- Parameters: {db:Identifier}. Idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.catchup_segments
(
    cluster        LowCardinality(String),
    timeline       UInt32,
    from_revision  UInt64,
    through        UInt64,
    term           UInt64,
    updated_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(through)
ORDER BY (cluster, timeline, from_revision)
TTL toDateTime(updated_at) + INTERVAL 30 DAY;
