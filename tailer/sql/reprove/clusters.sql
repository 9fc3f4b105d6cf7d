-- Every cluster that has a row the tailer proved: the checkpoints, catch-up
-- segments, restore gaps and quarantine entries tailer/recovery/reprove.ts
-- proves again under a new tailer key.
-- Parameters: {db:Identifier}
SELECT DISTINCT cluster FROM (
    SELECT cluster FROM {db:Identifier}.checkpoint_proofs WHERE proof != ''
    UNION ALL SELECT cluster FROM {db:Identifier}.catchup_segments WHERE proof != ''
    UNION ALL SELECT cluster FROM {db:Identifier}.gaps WHERE proof != ''
    UNION ALL SELECT cluster FROM {db:Identifier}.quarantine WHERE proof != ''
)
ORDER BY cluster
