-- The gaps the tailer recorded in which history was lost (compactions, and
-- restores whose history was compacted: history_lost = 1): revisions it could
-- never capture. `archive verify --audit-log` does not expect a force record
-- archived from inside one in the audit log. Empty {cluster}: every cluster.
-- Parameters: {db:Identifier} {cluster:String}
SELECT cluster, toString(from_revision) AS fromRevision, toString(to_revision) AS toRevision
FROM {db:Identifier}.gaps FINAL
WHERE ({cluster:String} = '' OR cluster = {cluster:String}) AND history_lost = 1
ORDER BY cluster, from_revision
