-- A restore whose gap was recorded but whose timeline was not (the leader lost etcd or its leadership between the
-- two): its generation is the one after the current timeline's (a restore's gap takes the next generation, and its
-- timeline is written last). Its rows are already marked; redoing it is idempotent (restores.ts), and only its gap
-- still says what it found. Its proof is checked by the caller: a row of another writer is no restore to finish.
-- Parameters: {db:Identifier}, {cluster:String}, {generation:UInt32} (the next generation).
SELECT from_revision, to_revision, reason, generation, previous_cluster_id, history_lost,
       toString(toUnixTimestamp64Milli(detected_at)) AS detected_at_ms, cluster_id, proof
FROM {db:Identifier}.gaps FINAL
WHERE cluster = {cluster:String} AND kind = 'restore' AND generation = {generation:UInt32}
SETTINGS prefer_column_name_to_alias = 1
