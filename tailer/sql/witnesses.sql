-- The latest captured put of up to {limit} keys at or before a revision: each
-- key's version and create revision then, to compare with etcd's keyspace now.
-- Bounded below ({from}) so the check stays cheap on a long history. Only the
-- current timeline's rows (superseded_by = 0, sql/065).
-- Parameters: {db:Identifier} {cluster:String} {from:UInt64} {upTo:UInt64} {limit:UInt32}
SELECT key, toString(max(revision)) AS last_revision, toString(argMax(version, revision)) AS last_version, toString(argMax(create_revision, revision)) AS last_create_revision
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String} AND revision > {from:UInt64} AND revision <= {upTo:UInt64} AND op = 'put' AND superseded_by = 0
GROUP BY key
ORDER BY max(revision) DESC
LIMIT {limit:UInt32}
