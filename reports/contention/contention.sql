-- Contention over grants granted in [from, to], in one pass over grants FINAL
-- (GROUPING SETS: each FINAL scan costs as much as the aggregation, so the
-- three views share one): kind 'group' — per namespace, class or key: grants,
-- distinct holders, wait p50/p95/p99, hold p50/p99, handoff gap p50/p95 (a
-- release → the next protected grant on the same key, both in the window),
-- expiries, force-releases; kind 'key' — the `top` hottest keys; kind
-- 'bucket' — the time series per bucketSeconds (aligned to the epoch).
-- Percentiles are quantilesExact: the value at 0-based rank floor(p·n) of the
-- sorted values. grants FINAL: exact under replays.
-- Only the `top` keys get a key row (and, by key, a group row): the others
-- group under NULL, which is dropped. A million keys each with their own
-- quantile and distinct-holder states cost most of the query (issue 14: 15 of
-- 20 s at 10 M events), and all but `top` of them were thrown away. The top
-- keys are found first by count (grants DESC, key: the ranking below).
-- Parameters: {db:Identifier} {by:String} {fromMs:Int64} {toMs:Int64} {namespace:String} {class:String} {groupLimit:UInt32} {top:UInt32} {bucketSeconds:UInt32}
WITH top_keys AS
(
    SELECT key
    FROM {db:Identifier}.grants FINAL
    PREWHERE granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
        AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        AND ({namespace:String} = '' OR namespace = {namespace:String})
        AND
-- @include grants/scopeBound.sql
        AND ({class:String} = '' OR class = {class:String})
    WHERE (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
    GROUP BY key
    ORDER BY count() DESC, key
    LIMIT {top:UInt32}
)
SELECT kind, grp, key, bucket_ms, grants, holders, wait, ended, hold, handoffs, handoff, expiries, force_releases
FROM
(
SELECT *, row_number() OVER (PARTITION BY kind ORDER BY grants DESC, grp, key) AS rank
FROM
(
    SELECT
        multiIf(grouping(grp_n) = 0, 'group', grouping(key_n) = 0, 'key', 'bucket') AS kind,
        assumeNotNull(grp_n) AS grp, assumeNotNull(key_n) AS key, toUnixTimestamp(bucket) * 1000 AS bucket_ms,
        count() AS grants,
        uniqExact(holder) AS holders,
        quantilesExact(0.5, 0.95, 0.99)(wait_ms) AS wait,
        countIf(duration_ms IS NOT NULL) AS ended,
        quantilesExact(0.5, 0.99)(duration_ms) AS hold,
        countIf(handoff_gap) AS handoffs,
        quantilesExactIf(0.5, 0.95)(gap_ms, handoff_gap) AS handoff,
        countIf(end_kind = 'expiry') AS expiries,
        countIf(end_kind = 'force') AS force_releases
    FROM
    (
        SELECT
            key IN top_keys AS is_top,
            if({by:String} = 'key' AND NOT is_top, NULL, toNullable(multiIf({by:String} = 'namespace', namespace, {by:String} = 'class', class, key))) AS grp_n,
            if(is_top, toNullable(key), NULL) AS key_n, holder, wait_ms, duration_ms, end_kind,
            toStartOfInterval(toDateTime(granted_at, 'UTC'), toIntervalSecond({bucketSeconds:UInt32})) AS bucket,
            -- The table is sorted by (cluster, key, grant_revision): unprotected grants (revision 0)
            -- come first on a key, so "previous protected grant" is the previous row when both are protected.
            lagInFrame(end_kind) OVER w = 'release' AND lagInFrame(unprotected) OVER w = 0 AND unprotected = 0 AS handoff_gap,
            toUnixTimestamp64Milli(granted_at) - toUnixTimestamp64Milli(lagInFrame(assumeNotNull(ended_at)) OVER w) AS gap_ms
        FROM {db:Identifier}.grants FINAL
        PREWHERE granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
            AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
            AND ({namespace:String} = '' OR namespace = {namespace:String})
            AND
-- @include grants/scopeBound.sql
            AND ({class:String} = '' OR class = {class:String})
        WHERE (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
        WINDOW w AS (PARTITION BY cluster, key ORDER BY grant_revision, spool_id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
    )
    GROUP BY GROUPING SETS ((grp_n), (key_n), (bucket))
    HAVING kind = 'bucket' OR (kind = 'group' AND grp_n IS NOT NULL) OR (kind = 'key' AND key_n IS NOT NULL)
)
)
WHERE kind = 'bucket' OR (kind = 'key' AND rank <= {top:UInt32}) OR (kind = 'group' AND rank <= {groupLimit:UInt32})
ORDER BY kind, rank
