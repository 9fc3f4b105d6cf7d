-- 065: every timeline of a cluster's etcd stays in the record (issue 21 item 4;
-- docs/architecture.md: nothing recorded is ever deleted or moved out of the record).
-- Until now a restore moved the captured events above the divergence to
-- rolled_back_events (11 of their columns) and DELETEd the grant rows there,
-- because the restored cluster reuses those revisions and `events` is keyed
-- (cluster, revision, key): the new rows would have replaced the old ones
-- under FINAL. Now nothing moves and nothing is deleted:
--
-- * `timeline` joins the identity of events, grants (and grants_by_holder)
--   and quarantine: the etcd_timelines.timeline of the tailer that captured
--   the row. The sorting key is extended (metadata only: a column added by the
--   same ALTER may end the key; rows already stored read 0), the primary key
--   stays (cluster, revision, key) / (cluster, key, grant_revision, spool_id),
--   so reads by revision or by key are as cheap as before. Where it matters:
--   a row of the new timeline at a reused (revision, key) is another row, not
--   a replacement; a replay within one timeline still collapses (same
--   timeline, same key). Not in the gaps key: gaps are another issue (item 7).
-- * etcd_timelines.timeline is the value a timeline writes there: its
--   generation for every timeline recorded from now on, 0 for those recorded
--   before (so a cluster restored before 065 keeps writing 0, which its rows
--   already carry: a grant opened before 065 is closed by a row with the same
--   identity). Hence a row's `timeline` is at most the generation that
--   captured it, and equals it for every timeline begun after 065.
-- * rolled_back_by (the generation of the restore that rolled the row back,
--   0: never) and superseded_by (the generation from which the row is no
--   longer part of the current timeline's account, 0: it is) mark a row; the
--   restore writes the mark by inserting the same row again with the mark set
--   (all columns kept) — events win by ingested_at, grants by row_version
--   (same version: the later insert wins). A restore to revision D marks the
--   captured rows above D rolled back and superseded; grants held at D (or
--   whose end above D was rolled back) are carried into the new timeline as
--   open rows of it, and their old rows marked superseded only. A cluster that
--   shares nothing with the captured history (a rebuild) starts a new history:
--   its events are marked superseded, never rolled back, its grants stay.
--   Readers: the current timeline is `superseded_by = 0`; timeline T is
--   `timeline <= T AND (superseded_by = 0 OR superseded_by > T)`; every
--   timeline's grants, each once, are `superseded_by = 0 OR rolled_back_by > 0`.
-- rolled_back_events is no longer written; what it holds stays.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

ALTER TABLE {db:Identifier}.etcd_timelines
    ADD COLUMN IF NOT EXISTS timeline UInt32 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS shares_history UInt8 DEFAULT 1;

ALTER TABLE {db:Identifier}.events
    ADD COLUMN IF NOT EXISTS timeline UInt32,
    MODIFY ORDER BY (cluster, revision, key, timeline);

ALTER TABLE {db:Identifier}.events
    ADD COLUMN IF NOT EXISTS rolled_back_by UInt32 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS superseded_by UInt32 DEFAULT 0;

ALTER TABLE {db:Identifier}.grants
    ADD COLUMN IF NOT EXISTS timeline UInt32,
    MODIFY ORDER BY (cluster, key, grant_revision, spool_id, timeline);

ALTER TABLE {db:Identifier}.grants
    ADD COLUMN IF NOT EXISTS rolled_back_by UInt32 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS superseded_by UInt32 DEFAULT 0;

ALTER TABLE {db:Identifier}.grants_by_holder
    ADD COLUMN IF NOT EXISTS timeline UInt32,
    MODIFY ORDER BY (holder, granted_at, cluster, key, grant_revision, spool_id, timeline);

ALTER TABLE {db:Identifier}.grants_by_holder
    ADD COLUMN IF NOT EXISTS rolled_back_by UInt32 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS superseded_by UInt32 DEFAULT 0;

ALTER TABLE {db:Identifier}.grants_by_holder_mv MODIFY QUERY
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, origin,
       timeline, rolled_back_by, superseded_by
FROM {db:Identifier}.grants;

ALTER TABLE {db:Identifier}.quarantine
    ADD COLUMN IF NOT EXISTS timeline UInt32,
    MODIFY ORDER BY (cluster, revision, key, timeline);
