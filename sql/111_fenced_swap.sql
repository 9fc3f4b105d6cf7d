-- 111: the fenced twins of 110 take the tables' places; the old tables stay
-- as *_unfenced (nothing recorded is deleted; they share their parts with the
-- new ones by hard links, and an operator may drop them once satisfied). The
-- materialized views reading `grants` and `events` are pointed at the tables
-- now carrying those names, grants_by_holder's with the new column.
-- One statement for the three renames: run twice (a crash after it and before
-- the ledger row) it fails loudly on the existing *_unfenced table rather
-- than swap anything back; then record 111 as applied by hand.
-- Parameters: {db:Identifier}.

RENAME TABLE {db:Identifier}.events TO {db:Identifier}.events_unfenced,
             {db:Identifier}.events_fenced TO {db:Identifier}.events,
             {db:Identifier}.grants TO {db:Identifier}.grants_unfenced,
             {db:Identifier}.grants_fenced TO {db:Identifier}.grants,
             {db:Identifier}.grants_by_holder TO {db:Identifier}.grants_by_holder_unfenced,
             {db:Identifier}.grants_by_holder_fenced TO {db:Identifier}.grants_by_holder;

ALTER TABLE {db:Identifier}.grants_by_holder_mv MODIFY QUERY
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, origin,
       timeline, rolled_back_by, superseded_by, term
FROM {db:Identifier}.grants;

ALTER TABLE {db:Identifier}.grant_high_water_mv MODIFY QUERY
SELECT cluster, max(token) AS token
FROM {db:Identifier}.events
WHERE event_type = 'grant' AND op = 'put' AND origin = 'api' AND unprotected = 0
GROUP BY cluster;
