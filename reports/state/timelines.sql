-- The etcd timelines of one cluster (sql/051, sql/065), oldest first: what a
-- `timeline` parameter may name, and where each ended timeline's capture
-- stopped (the next one's previous_checkpoint), and the last revision each
-- shares with the one before it (diverged_after; 0 for a history that shares
-- nothing: a rebuilt etcd).
-- Parameters: {db:Identifier} {cluster:String}
SELECT generation, toString(previous_checkpoint) AS previous_checkpoint, toString(diverged_after) AS diverged_after, shares_history
FROM {db:Identifier}.etcd_timelines FINAL
WHERE cluster = {cluster:String}
ORDER BY generation
