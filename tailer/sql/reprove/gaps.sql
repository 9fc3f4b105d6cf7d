-- One cluster's proven restore gaps (sql/220), each with the id gapsWrite.sql picks it by.
-- Parameters: {db:Identifier} {cluster:String}
SELECT concat(toString(from_revision), '/', identity) AS id, toString(generation) AS generationText, toString(from_revision) AS fromText,
       toString(to_revision) AS toText, toString(toUnixTimestamp64Milli(detected_at)) AS detectedAtMs, toString(history_lost) AS historyLostText,
       previous_cluster_id AS previousClusterId, cluster_id AS clusterId, proof
FROM {db:Identifier}.gaps FINAL
WHERE cluster = {cluster:String} AND kind = 'restore' AND proof != ''
