-- One chunk of a grants export: the planned filters (see grants_chunks.sql)
-- and the chunk's (cluster, key) bounds, lo exclusive, hi inclusive; hasLo /
-- hasHi 0 means open-ended. Bounds are on the sorting key's prefix, so each
-- chunk reads only its own granules. Still-held grants have end_kind NULL.
-- The caller appends the output format (FORMAT Parquet | CSVWithNames | CSV).
-- Parameters: {db:Identifier} {cluster:String} {key:String} {keyPrefix:String} {holder:String} {class:String} {namespace:String} {hasToken:UInt8} {token:UInt64} {fromMs:Int64} {toMs:Int64} {hasLo:UInt8} {loCluster:String} {loKey:String} {hasHi:UInt8} {hiCluster:String} {hiKey:String}
SELECT
    cluster,
    key,
    namespace,
    lock_path,
    class,
    holder,
    session,
    token,
    epoch,
    grant_revision,
    spool_id,
    granted_at,
    wait_ms,
    nullIf(end_kind, '') AS end_kind,
    end_revision,
    ended_at,
    ended_at_error_ms,
    duration_ms,
    unprotected,
    start_known
FROM {db:Identifier}.grants FINAL
PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
    AND ({key:String} = '' OR key = {key:String})
    AND ({keyPrefix:String} = '' OR startsWith(key, {keyPrefix:String}))
    AND ({holder:String} = '' OR holder = {holder:String})
    AND ({class:String} = '' OR class = {class:String})
    AND ({namespace:String} = '' OR namespace = {namespace:String})
    AND ({hasToken:UInt8} = 0 OR token = {token:UInt64})
    AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
    AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    AND ({hasLo:UInt8} = 0 OR cluster > {loCluster:String} OR (cluster = {loCluster:String} AND key > {loKey:String}))
    AND ({hasHi:UInt8} = 0 OR cluster < {hiCluster:String} OR (cluster = {hiCluster:String} AND key <= {hiKey:String}))
ORDER BY cluster, key, grant_revision, spool_id
