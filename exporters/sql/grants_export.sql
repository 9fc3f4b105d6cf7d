-- One chunk of a grants export: the grant filter (grants/filter*.sql, the
-- plan's window rule: granted in [from, to) for every export today) and the
-- chunk's (cluster, key) bounds, lo exclusive, hi inclusive; hasLo /
-- hasHi 0 means open-ended. Bounds are on the sorting key's prefix, so each
-- chunk reads only its own granules. Still-held grants have end_kind NULL.
-- The caller appends the output format (FORMAT Parquet | CSVWithNames | CSV).
-- Parameters: {db:Identifier} {hasLo:UInt8} {loCluster:String} {loKey:String} {hasHi:UInt8} {hiCluster:String} {hiKey:String}
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
    start_known,
    origin,                              -- api, or foreign: put straight into etcd, not by the lock API
    timeline,                            -- the etcd timeline (generation) the grant was captured in
    toBool(rolled_back_by > 0) AS rolled_back -- etcd later rolled it back (a restore): a real hold all the same
FROM
(
    -- The filter reads end_kind; the outer SELECT's `end_kind` alias (NULL while held) must not shadow it.
    SELECT *
    FROM {db:Identifier}.grants FINAL
    PREWHERE
-- @include grants/filterPrewhere.sql
        AND ({hasLo:UInt8} = 0 OR cluster > {loCluster:String} OR (cluster = {loCluster:String} AND key > {loKey:String}))
        AND ({hasHi:UInt8} = 0 OR cluster < {hiCluster:String} OR (cluster = {hiCluster:String} AND key <= {hiKey:String}))
    WHERE
-- @include grants/filterWhere.sql
)
ORDER BY cluster, key, grant_revision, spool_id, timeline
