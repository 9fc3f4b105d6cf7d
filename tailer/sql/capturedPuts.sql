-- The puts the tailer captured in the current timeline (sql/065: superseded
-- rows are an earlier timeline's) on one page of keys etcd holds now, within
-- the page's revision range: the divergence search (restores.ts) keeps those
-- whose revision and value are exactly etcd's. Asked once per page of etcd's
-- keyspace, never holding more than a page.
-- Parameters: {db:Identifier} {cluster:String} {keys:Array(String)} {lowest:UInt64} {highest:UInt64}
SELECT key, toString(revision) AS put_revision, value, value_bytes, value_sha256
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String}
    AND revision >= {lowest:UInt64} AND revision <= {highest:UInt64}
    AND key IN {keys:Array(String)}
    AND op = 'put'
    AND superseded_by = 0
