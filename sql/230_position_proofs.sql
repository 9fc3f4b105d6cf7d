-- 230: the tailer's resume position carries its writer's proof. Whoever can
-- write the store could insert a checkpoint (or a catch-up segment) ahead of
-- what was captured, and a start would resume past revisions it never
-- watched: no gap, no alarm. Each row now carries the tailer's proof over
-- every field that says where capture stands (core/proof.ts); a start takes
-- only proven rows (tailer/provenPosition.ts), so a forged or edited row can
-- make it replay, never skip. Rows written before this migration carry ''.
-- `checkpoints` keeps one row per cluster once merged (the newest by
-- updated_at), so one inserted row dated in the future would merge every
-- proven row away (insider review): the proven positions are copied into
-- checkpoint_proofs, which keeps each leadership term's highest row of each
-- timeline. A row there whose proof does not hold can only replace a genuine
-- row of the same term (a replay, never a skip); only deleting rows from it
-- makes a store look as if it predates proofs.
-- Parameters: {db:Identifier}. Idempotent (IF NOT EXISTS).

ALTER TABLE {db:Identifier}.checkpoints ADD COLUMN IF NOT EXISTS proof String DEFAULT '';

ALTER TABLE {db:Identifier}.catchup_segments ADD COLUMN IF NOT EXISTS proof String DEFAULT '';

CREATE TABLE IF NOT EXISTS {db:Identifier}.checkpoint_proofs
(
    cluster     LowCardinality(String),
    timeline    UInt32,
    term        UInt64,
    revision    UInt64,
    leader      String,
    proof       String,
    updated_at  DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(revision)
ORDER BY (cluster, timeline, term);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.checkpoint_proofs_mv TO {db:Identifier}.checkpoint_proofs AS
SELECT cluster, timeline, term, revision, leader, proof, updated_at
FROM {db:Identifier}.checkpoints
WHERE proof != '';
