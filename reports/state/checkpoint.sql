-- The tailer's checkpoint of a cluster: every event up to it is captured.
-- Parameters: {db:Identifier} {cluster:String}
SELECT max(revision) AS revision
FROM {db:Identifier}.checkpoints
WHERE cluster = {cluster:String}
