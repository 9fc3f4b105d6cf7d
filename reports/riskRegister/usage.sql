-- How much each advisory class was used, over (as_of − 24 h, as_of] and
-- (as_of − 30 d, as_of]: grants, distinct keys and unprotected grants counted
-- by grant time; expiries (ended by lease expiry, never released) and
-- force-releases counted by end time; foreign grants (put straight into etcd,
-- not by the lock API) by grant time, holds deleted by hand (no marker, the
-- lease outlived them) by end time. grants FINAL: exact under replays.
-- The second PREWHERE line is WHERE's 30-day condition, applied before FINAL
-- merges (issue 14, issue 22: the register over 100 M events): it drops the
-- rows of grants granted before the 30 days that did not end in them, closed
-- rows and open rows alike (most of a 90-day store, and every unmerged open
-- row of it). The answer is the same: such a row never passes WHERE, and
-- dropping an open row never lets an older row win FINAL (a grant's closed
-- rows carry its end revision as their version, its open rows 0).
-- Parameters: {db:Identifier} {classes:Array(String)} {asOfMs:Int64}
WITH
    fromUnixTimestamp64Milli({asOfMs:Int64}, 'UTC') AS as_of,
    as_of - INTERVAL 1 DAY AS d1,
    as_of - INTERVAL 30 DAY AS d30,
    granted_at > d1 AND granted_at <= as_of AS granted_1,
    granted_at > d30 AND granted_at <= as_of AS granted_30,
    ended_at > d1 AND ended_at <= as_of AS ended_1,
    ended_at > d30 AND ended_at <= as_of AS ended_30
SELECT
    class,
    countIf(granted_1) AS grants_24h,
    countIf(granted_30) AS grants_30d,
    uniqExactIf(key, granted_1) AS distinct_keys_24h,
    uniqExactIf(key, granted_30) AS distinct_keys_30d,
    countIf(end_kind = 'expiry' AND ended_1) AS expiries_24h,
    countIf(end_kind = 'expiry' AND ended_30) AS expiries_30d,
    countIf(end_kind = 'force' AND ended_1) AS force_releases_24h,
    countIf(end_kind = 'force' AND ended_30) AS force_releases_30d,
    countIf(unprotected = 1 AND granted_1) AS unprotected_24h,
    countIf(unprotected = 1 AND granted_30) AS unprotected_30d,
    countIf(origin = 'foreign' AND granted_1) AS foreign_grants_24h,
    countIf(origin = 'foreign' AND granted_30) AS foreign_grants_30d,
    countIf(end_kind = 'deleted' AND ended_1) AS deleted_24h,
    countIf(end_kind = 'deleted' AND ended_30) AS deleted_30d
FROM {db:Identifier}.grants FINAL
PREWHERE class IN {classes:Array(String)} AND granted_at <= as_of
    AND (granted_at > d30 OR ended_at > d30)
WHERE (granted_at > d30 OR ended_at > d30)
    AND (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
GROUP BY class
