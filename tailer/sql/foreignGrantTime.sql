-- The grant time a foreign hold was given when its put was captured
-- (foreignGrantTimes.ts), for its delete once etcd compacted the put's
-- revision. Every timeline's row: the same grant revision names one grant.
-- Parameters: {db:Identifier} {cluster:String} {key:String} {grantRevision:UInt64}
SELECT toString(toUnixTimestamp64Milli(granted_at)) AS ms
FROM {db:Identifier}.grants FINAL
WHERE cluster = {cluster:String} AND key = {key:String} AND grant_revision = {grantRevision:UInt64} AND spool_id = ''
ORDER BY timeline DESC
LIMIT 1
