-- Quarantined changes (values the tailer could not decode or ClickHouse
-- would not take: kept with the reason and the raw value, never dropped),
-- quarantined in [from, to], optionally of one cluster (empty: all), oldest
-- first, after a keyset cursor (at, cluster, revision, key).
-- A scoped reader (grants/scope.ts) sees its clusters' only and, when its
-- scope names namespaces, only changes of hold and queue keys in them (the
-- namespace is the key's first segment after its prefix); system keys, spool
-- lines and junk outside the lock keyspace have none.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {hasCursor:UInt8} {afterMs:Int64} {afterCluster:String} {afterRevision:UInt64} {afterKey:String} {limit:UInt32} {valueBytes:UInt32} {scopeClusters:Array(String)}
-- A value is answered as its first {valueBytes} bytes with its size and
-- sha256 (etcd takes values up to 1.5 MiB: a page of 1 000 whole ones was
-- 1.5 GB built in one process); the store keeps its first 64 KiB with the
-- whole value's size and sha256 (sql/290; whole below that).
SELECT cluster, toString(revision) AS revision_text, key, toString(op) AS op_text, substring(value, 1, {valueBytes:UInt32}) AS value_prefix,
       value_bytes AS whole_bytes, if(value_sha256 = '', lower(hex(SHA256(value))), value_sha256) AS whole_sha256, reason, toUnixTimestamp64Milli(at) AS at_ms
FROM {db:Identifier}.quarantine FINAL
WHERE ({cluster:String} = '' OR cluster = {cluster:String})
  AND (empty({scopeClusters:Array(String)}) OR has({scopeClusters:Array(String)}, cluster))
  AND
-- @include grants/keyNamespaceBound.sql
  AND at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
  AND at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
  AND ({hasCursor:UInt8} = 0
       OR (toUnixTimestamp64Milli(at), toString(cluster), revision, key) > ({afterMs:Int64}, {afterCluster:String}, {afterRevision:UInt64}, {afterKey:String}))
ORDER BY toUnixTimestamp64Milli(at), toString(cluster), revision, key
LIMIT {limit:UInt32}
