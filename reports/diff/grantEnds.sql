-- How the grants of some keys ended (grants FINAL: the closed row wins).
-- The caller picks the grants it asks about by grant revision.
-- Only the rows of etcd timeline {timeline} (sql/065).
-- Parameters: {db:Identifier} {cluster:String} {keys:Array(String)} {timeline:UInt32}
SELECT key, grant_revision, end_kind, end_revision, toUnixTimestamp64Milli(ended_at) AS ended_ms
FROM {db:Identifier}.grants FINAL
PREWHERE cluster = {cluster:String} AND key IN {keys:Array(String)} AND spool_id = ''
WHERE end_kind != ''
    AND timeline <= {timeline:UInt32} AND (superseded_by = 0 OR superseded_by > {timeline:UInt32})  -- timeline {timeline}'s rows (sql/065)
