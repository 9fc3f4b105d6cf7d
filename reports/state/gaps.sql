-- The recorded gaps of a cluster that begin at or before a revision.
-- Parameters: {db:Identifier} {cluster:String} {revision:UInt64}
SELECT from_revision, to_revision, reason
FROM {db:Identifier}.gaps FINAL
WHERE cluster = {cluster:String} AND from_revision <= {revision:UInt64}
ORDER BY from_revision
