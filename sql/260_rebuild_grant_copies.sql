-- 260: grants_by_key and grants_by_holder written again from `grants` (issue
-- 40 item 3). `lockaudit verify` now compares them with `grants` row for row
-- (exporters/sql/copies_check.sql), and stores upgraded from before sql/065
-- hold differences that are history, not tampering: restores of that time
-- deleted rolled-back grants from `grants` with ALTER … DELETE, which no
-- materialized view carries, so the copies kept rows `grants` no longer has;
-- and 140's backfill could leave duplicates. Each copy is emptied and filled
-- from what `grants` keeps under FINAL. A row the tailer inserts meanwhile
-- arrives through the view and may be read by the fill too: identical rows,
-- which FINAL collapses. Run with the tailers stopped on a ClickHouse server
-- (every lockaudit process migrates before its roles start).
-- Parameters: {db:Identifier}. Safe to run again (the same rows again).

TRUNCATE TABLE {db:Identifier}.grants_by_key;

INSERT INTO {db:Identifier}.grants_by_key
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, origin,
       timeline, rolled_back_by, superseded_by, term
FROM {db:Identifier}.grants FINAL;

TRUNCATE TABLE {db:Identifier}.grants_by_holder;

INSERT INTO {db:Identifier}.grants_by_holder
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, origin,
       timeline, rolled_back_by, superseded_by, term
FROM {db:Identifier}.grants FINAL;
