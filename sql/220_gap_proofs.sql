-- 220: a restore gap carries the tailer's proof over every field of it
-- (core/proof.ts restoreGapMac). A restore marks captured rows rolled back in
-- periods the digest worker has already sealed; the worker re-signs such a
-- period only for marks of a restore whose gap is proven, so a store row
-- alone (a forged restore record, marks written by hand) explains nothing.
-- '' for gaps recorded before 220 and for compaction gaps.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

ALTER TABLE {db:Identifier}.gaps
    ADD COLUMN IF NOT EXISTS proof String DEFAULT '';
