-- Whether a cluster's history is in the store: its highest checkpoint (0 or
-- NULL: never captured). Read only to answer a cluster no longer configured.
-- Parameters: {db:Identifier} {cluster:String}
SELECT max(revision) AS revision
FROM {db:Identifier}.checkpoints
WHERE cluster = {cluster:String}
