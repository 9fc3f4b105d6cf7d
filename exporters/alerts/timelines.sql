-- The etcd timelines of one cluster (sql/051, sql/065), oldest first, for an
-- alert sink's position: each one's `timeline` (what its rows carry), the
-- last revision it shares with the one before (diverged_after: where a sink
-- enters it), and where the one before it ended its capture
-- (previous_checkpoint: how far a sink reads that one).
-- Parameters: {db:Identifier} {cluster:String}
SELECT generation, timeline, toString(diverged_after) AS diverged_after, toString(previous_checkpoint) AS previous_checkpoint
FROM {db:Identifier}.etcd_timelines FINAL
WHERE cluster = {cluster:String}
ORDER BY generation
