-- How the grants of some keys ended (grants FINAL: the closed row wins).
-- The caller picks the grants it asks about by grant revision.
-- Parameters: {db:Identifier} {cluster:String} {keys:Array(String)}
SELECT key, grant_revision, end_kind, end_revision, toUnixTimestamp64Milli(ended_at) AS ended_ms
FROM {db:Identifier}.grants FINAL
PREWHERE cluster = {cluster:String} AND key IN {keys:Array(String)} AND spool_id = ''
WHERE end_kind != ''
