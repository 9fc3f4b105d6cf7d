-- 230: the tailer's resume position carries its writer's proof. Whoever can
-- write the store could insert a checkpoint (or a catch-up segment) ahead of
-- what was captured, and a start would resume past revisions it never
-- watched: no gap, no alarm. Each row now carries the tailer's proof over
-- every field that says where capture stands (core/proof.ts); a start takes
-- only proven rows (tailer/provenPosition.ts), so a forged or edited row can
-- make it replay, never skip. Rows written before this migration carry ''.
-- Parameters: {db:Identifier}. Idempotent (IF NOT EXISTS).

ALTER TABLE {db:Identifier}.checkpoints ADD COLUMN IF NOT EXISTS proof String DEFAULT '';

ALTER TABLE {db:Identifier}.catchup_segments ADD COLUMN IF NOT EXISTS proof String DEFAULT '';
