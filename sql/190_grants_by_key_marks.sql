-- 190: the restore marks grants_by_key's backfill (sql/140) may have lost.
-- A restore marks a grant by inserting its row again with the mark and the
-- same replace version (tailer/sql/markRolledBackGrants.sql, markEvents.sql):
-- of equal versions the later insert wins under FINAL. `grants` received the
-- marks after the rows they mark, and so did grants_by_key through its view
-- from 140 on; but 140 filled grants_by_key from what `grants` held by one
-- INSERT … SELECT, which reads parts in no set order, so for a grant marked
-- before 140 the unmarked row could come last and win: key history then
-- showed a rolled-back grant as not rolled back, and a grant carried into a
-- later timeline twice. Here every row that carries a mark, as `grants`
-- FINAL keeps it, is inserted into grants_by_key again: now the later insert,
-- it wins its tie (and collapses with itself where the backfill got it right).
-- Rows marked after this arrive through the view, after what they mark.
-- Only the keys that hold a mark are read through FINAL (a mark row is found
-- without it: it carries the mark itself).
-- Parameters: {db:Identifier}. Idempotent (inserting the same rows again).

INSERT INTO {db:Identifier}.grants_by_key
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, origin,
       timeline, rolled_back_by, superseded_by, term
FROM {db:Identifier}.grants FINAL
PREWHERE (cluster, key) IN (SELECT DISTINCT cluster, key FROM {db:Identifier}.grants WHERE rolled_back_by > 0 OR superseded_by > 0)
WHERE rolled_back_by > 0 OR superseded_by > 0;
