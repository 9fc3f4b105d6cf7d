-- The clusters whose hours can be sealed: those with a tailer checkpoint.
-- Parameters: {db:Identifier}
SELECT DISTINCT cluster FROM {db:Identifier}.checkpoints ORDER BY cluster
