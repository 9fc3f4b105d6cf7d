-- 240: a quarantined grant row carries the tailer's proof (issue 40 item 3).
-- The grants check (exporters/sql/grants_check_events.sql) excuses a start
-- event without a grant row when the row is in quarantine as op 'grants-row'
-- (the store refused it); a row of that op inserted by hand excused a grant
-- deleted from `grants`. The tailer now proves the (cluster, revision, key)
-- of each such row (core/proof.ts quarantinedGrantMac) and the check excuses
-- only proven ones. Rows written before this carry '' and excuse nothing.
-- Parameters: {db:Identifier}. Idempotent.

ALTER TABLE {db:Identifier}.quarantine
    ADD COLUMN IF NOT EXISTS proof String DEFAULT '';
