-- A cluster's restore gaps with their proofs (sql/220): the only record the
-- digest worker and `verify` take as the explanation of rows marked rolled
-- back or superseded after their period was sealed (explain.ts), once each
-- proof checks; `recorded` = 1 once the restore's timeline record is written
-- (the tailer writes it last, after every mark): until then it is in progress.
-- Parameters: {db:Identifier} {cluster:String}
SELECT toString(generation) AS generation,
       toUInt8(generation IN (SELECT generation FROM {db:Identifier}.etcd_timelines WHERE cluster = {cluster:String})) AS recorded, toString(from_revision) AS fromRevision, toString(to_revision) AS toRevision,
       toString(toUnixTimestamp64Milli(detected_at)) AS detectedAtMs, toString(history_lost) AS historyLost,
       previous_cluster_id AS previousClusterId, cluster_id AS clusterId, proof
FROM {db:Identifier}.gaps FINAL
WHERE cluster = {cluster:String} AND kind = 'restore' AND proof != ''
ORDER BY generation
SETTINGS prefer_column_name_to_alias = 1
