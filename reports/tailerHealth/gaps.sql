-- History ranges lost before capture, newest first; cluster '' means every cluster.
-- Parameters: {db:Identifier} {cluster:String} {limit:UInt32}
SELECT cluster, from_revision, to_revision, detected_at, reason
FROM {db:Identifier}.gaps FINAL
WHERE {cluster:String} = '' OR cluster = {cluster:String}
ORDER BY detected_at DESC
LIMIT {limit:UInt32}
