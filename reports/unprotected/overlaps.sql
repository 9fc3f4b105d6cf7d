-- Grants on the given keys whose hold overlaps [from, to]: the candidates for
-- double holding beside an unprotected grant. Protected ones (quorum-granted,
-- real tokens) and unprotected ones too: two API replicas granting one key
-- from memory during one quorum loss are double holders as well. The exact
-- per-grant overlap test (and leaving out the grant itself) is the caller's.
-- A grant etcd later rolled back is a candidate too: it was a real hold.
-- Parameters: {db:Identifier} {keys:Array(String)} {fromMs:Int64} {toMs:Int64}
SELECT
    cluster, key, grant_revision, token, holder, class, namespace,
    toUnixTimestamp64Milli(granted_at) AS granted_at_ms,
    toUnixTimestamp64Milli(ended_at) AS ended_at_ms,
    end_kind, end_revision, wait_ms, duration_ms, unprotected, spool_id, timeline, rolled_back_by, start_known, ended_at_error_ms, origin
FROM {db:Identifier}.grants FINAL
PREWHERE key IN {keys:Array(String)}
    AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    AND
-- @include grants/scopeBound.sql
WHERE (ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
    AND (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065): a rolled-back hold was real
ORDER BY cluster, key, granted_at, grant_revision
