-- 120: an alert sink's position names the etcd timeline it is in (issue 21
-- item 7). A restore starts a new timeline (etcd_timelines, sql/051, sql/065)
-- whose revisions reuse numbers the old one already had: a position of
-- (revision, key) alone sat above them, so the sink never delivered the
-- restore gap nor the new timeline's events below its old position. The
-- position is now (generation, revision, key): a sink finishes a timeline up
-- to where its capture ended, then moves to the next one at the last revision
-- both share (exporters/alerts/webhookDelivery.ts). Rows written before this
-- migration read generation 0, the first timeline: a sink of a cluster
-- restored before it walks the later timelines from their start (at least
-- once: receivers drop what they already have by event id).
-- Parameters: {db:Identifier}. Idempotent (IF NOT EXISTS).

ALTER TABLE {db:Identifier}.alert_checkpoints ADD COLUMN IF NOT EXISTS generation UInt32 DEFAULT 0;
