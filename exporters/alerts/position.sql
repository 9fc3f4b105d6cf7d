-- An alert sink's position in a cluster: the etcd timeline (generation) it is
-- in, and (revision, key) within it; (0, 0, '') when it never delivered.
-- Parameters: {db:Identifier} {sink:String} {cluster:String}
SELECT p.generation, p.revision, p.key, p.spool_ms, p.spool_key, p.found
FROM
(
    SELECT generation, revision, key, spool_ms, spool_key, 1 AS found
    FROM {db:Identifier}.alert_checkpoints FINAL
    WHERE sink = {sink:String} AND cluster = {cluster:String}
    UNION ALL
    SELECT toUInt32(0), toUInt64(0), '', toInt64(0), '', 0
) AS p
ORDER BY p.found DESC
LIMIT 1
