-- An alert sink's position in a cluster, and the tailer's checkpoint (how far
-- the log is durable).
-- Parameters: {db:Identifier} {sink:String} {cluster:String}
SELECT
    (SELECT max(revision) FROM {db:Identifier}.checkpoints WHERE cluster = {cluster:String}) AS through_revision,
    p.revision, p.key, p.spool_ms, p.spool_key, p.found
FROM
(
    SELECT revision, key, spool_ms, spool_key, 1 AS found
    FROM {db:Identifier}.alert_checkpoints FINAL
    WHERE sink = {sink:String} AND cluster = {cluster:String}
    UNION ALL
    SELECT toUInt64(0), '', toInt64(0), '', 0
) AS p
ORDER BY p.found DESC
LIMIT 1
