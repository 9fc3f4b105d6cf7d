-- A restore whose gap was recorded but whose timeline was not (the leader lost etcd or its leadership between the
-- two): the lowest such generation above the current timeline's. Its rows are already marked; redoing it is
-- idempotent (restores.ts), and only its gap still says what it found.
-- Parameters: {db:Identifier}, {cluster:String}, {generation:UInt32}.
SELECT from_revision, to_revision, reason, generation, previous_cluster_id, history_lost
FROM {db:Identifier}.gaps FINAL
WHERE cluster = {cluster:String} AND kind = 'restore' AND generation > {generation:UInt32}
ORDER BY generation
LIMIT 1
