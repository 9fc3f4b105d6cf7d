-- The two-person acts (sql/200) of [from, to], newest first, optionally of one
-- cluster, one kind or one request (empty: all). A scoped reader
-- (grants/scope.ts) sees its clusters' acts and, when its scope names
-- namespaces, force-releases of locks in them (the lock's first segment) and
-- every epoch advance of its clusters (the cluster's, no lock's).
-- Parameters: {db:Identifier} {cluster:String} {kind:String} {requestId:String} {fromMs:Int64} {toMs:Int64} {limit:UInt32} {scopeClusters:Array(String)}
SELECT toUnixTimestamp64Milli(at) AS at_ms, cluster, kind, action, request_id, request_hash, actor, requester, key, reason, toString(revision) AS revision
FROM {db:Identifier}.two_person_log
WHERE ({cluster:String} = '' OR cluster = {cluster:String})
  AND ({kind:String} = '' OR kind = {kind:String})
  AND ({requestId:String} = '' OR request_id = {requestId:String})
  AND (empty({scopeClusters:Array(String)}) OR has({scopeClusters:Array(String)}, cluster))
  AND (kind = 'epoch-advance' OR
-- @include grants/keyNamespaceBound.sql
  )
  AND at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
  AND at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
ORDER BY at DESC, request_id
LIMIT {limit:UInt32}
