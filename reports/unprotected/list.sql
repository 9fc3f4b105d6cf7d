-- Unprotected grants (granted without quorum from a fail-open spool, shipped
-- later) granted in [from, to], oldest first, each with its report id: the
-- first 16 bytes of SHA-256 over (cluster, key, grant_revision, spool_id),
-- stable across replays. grants FINAL: exact under replays.
-- Parameters: {db:Identifier} {fromMs:Int64} {toMs:Int64} {limit:UInt32}
SELECT *
FROM
(
    SELECT
        lower(hex(substring(SHA256(concat(cluster, char(31), key, char(31), toString(grant_revision), char(31), spool_id)), 1, 16))) AS id,
        cluster, key, holder, class, namespace, spool_id, grant_revision, token,
        toUnixTimestamp64Milli(granted_at) AS granted_at_ms,
        toUnixTimestamp64Milli(ended_at) AS ended_at_ms,
        end_kind, end_revision, wait_ms, duration_ms, unprotected
    FROM {db:Identifier}.grants FINAL
    PREWHERE unprotected = 1
        AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
        AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        AND
-- @include grants/scopeBound.sql
)
ORDER BY granted_at_ms, cluster, key, spool_id
LIMIT {limit:UInt32}
