-- The gaps the tailer recorded (compactions, restores): revisions it could
-- never capture. `archive verify --audit-log` does not expect a force record
-- archived from inside one in the audit log. Empty {cluster}: every cluster.
-- Parameters: {db:Identifier} {cluster:String}
SELECT cluster, toString(from_revision) AS fromRevision, toString(to_revision) AS toRevision
FROM {db:Identifier}.gaps FINAL
WHERE {cluster:String} = '' OR cluster = {cluster:String}
ORDER BY cluster, from_revision
