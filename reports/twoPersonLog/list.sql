-- The two-person acts (sql/200) of [from, to], newest first, optionally of one
-- cluster, one kind or one request (empty: all).
-- Parameters: {db:Identifier} {cluster:String} {kind:String} {requestId:String} {fromMs:Int64} {toMs:Int64} {limit:UInt32}
SELECT toUnixTimestamp64Milli(at) AS at_ms, cluster, kind, action, request_id, request_hash, actor, requester, key, reason, toString(revision) AS revision
FROM {db:Identifier}.two_person_log
WHERE ({cluster:String} = '' OR cluster = {cluster:String})
  AND ({kind:String} = '' OR kind = {kind:String})
  AND ({requestId:String} = '' OR request_id = {requestId:String})
  AND at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
  AND at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
ORDER BY at DESC, request_id
LIMIT {limit:UInt32}
