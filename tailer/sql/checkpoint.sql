-- One cluster's checkpoint: the highest revision ever written (0: none).
-- Parameters: {db:Identifier} {cluster:String}
SELECT max(revision) AS revision
FROM {db:Identifier}.checkpoints_highest
WHERE cluster = {cluster:String}
