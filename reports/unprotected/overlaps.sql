-- Protected grants (quorum-granted, real tokens) on the given keys whose hold
-- overlaps [from, to]: the candidates for double holding beside unprotected
-- grants; the exact per-grant overlap test is done by the caller.
-- Parameters: {db:Identifier} {keys:Array(String)} {fromMs:Int64} {toMs:Int64}
SELECT
    cluster, key, grant_revision, token, holder, class, namespace,
    toUnixTimestamp64Milli(granted_at) AS granted_at_ms,
    toUnixTimestamp64Milli(ended_at) AS ended_at_ms,
    end_kind, end_revision, wait_ms, duration_ms, unprotected, spool_id
FROM {db:Identifier}.grants FINAL
PREWHERE unprotected = 0
    AND key IN {keys:Array(String)}
    AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
WHERE ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
ORDER BY cluster, key, granted_at, grant_revision
