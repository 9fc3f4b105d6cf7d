-- Contention from sealed hours (sql/130): the same rows as contention.sql,
-- exactly, with the sealed hours' -State values merged instead of their
-- grants aggregated. Four parts, merged by one GROUP BY (kind, group):
--   sealed   the covered hours' states (covered.sql: whole hours of the
--            window whose seal still matches), per namespace or class and bucket;
--   pending  the end of the covered hours' grants that were held when sealed
--            (read raw by their identity);
--   handoffs the covered hours' handoffs whose previous grant is in the window;
--   raw      every other grant of the window (the partial hours at its ends,
--            hours not sealed yet or no longer matching), with contention.sql's
--            window over all of the window's grants of their keys — and every
--            grant of the `top` hottest keys, which give the key rows (and, by
--            key, the group rows): keys are no dimension of the seals.
-- Buckets are whole hours (bucketSeconds a multiple of 3600; index.ts uses
-- this file only then). The covered hours come in as runs, cluster i's hours
-- [runFrom[i], runTo[i]) (unix seconds), each read from its newest seal
-- (contention_seals FINAL: its seal_id and attempt, sql/180): a few numbers,
-- not one per hour (a long literal array costs every query that binds it;
-- covered.sql checked each hour).
-- Parameters: {db:Identifier} {by:String} {fromMs:Int64} {toMs:Int64} {namespace:String} {class:String} {groupLimit:UInt32} {top:UInt32} {bucketSeconds:UInt32} {clusters:Array(String)} {runFrom:Array(UInt32)} {runTo:Array(UInt32)} {topKeys:Array(String)} {pendingClusters:Array(String)} {pendingKeys:Array(String)} {pendingRevisions:Array(String)} {pendingSpools:Array(String)} {pendingTimelines:Array(UInt32)}
SELECT kind, grp, key, bucket_ms, grants, holders, wait, ended, hold, handoffs, handoff, expiries, force_releases
FROM
(
SELECT *, row_number() OVER (PARTITION BY kind ORDER BY grants DESC, grp, key) AS rank
FROM
(
    SELECT
        -- each part's rows go to the sets they name (no NULL group is built: GROUPING SETS would merge every
        -- state of the window into the discarded NULL key group)
        arrayJoin(arrayFilter(k -> (k = 'group' AND grp_n IS NOT NULL) OR (k = 'key' AND key_n IS NOT NULL) OR (k = 'bucket' AND bucket IS NOT NULL),
                              ['group', 'key', 'bucket'])) AS kind,
        if(kind = 'group', assumeNotNull(grp_n), '') AS grp, if(kind = 'key', assumeNotNull(key_n), '') AS key,
        if(kind = 'bucket', toUnixTimestamp(assumeNotNull(bucket)) * 1000, 0) AS bucket_ms,
        sum(p_grants) AS grants,
        -- each state merged only into the sets whose rows show it (index.ts): a series point has no distinct
        -- holders and no handoff gap, a hottest key no hold time and no handoff gap (merging the holders' sets
        -- once more per bucket was a quarter of this query at 100 M events)
        uniqExactMergeIf(p_holders, kind != 'bucket') AS holders,
        quantilesExactMerge(0.5, 0.95, 0.99)(p_wait) AS wait,
        sum(p_ended) AS ended,
        quantilesExactMergeIf(0.5, 0.99)(p_hold, kind != 'key') AS hold,
        sum(p_handoffs) AS handoffs,
        quantilesExactMergeIf(0.5, 0.95)(p_handoff, kind = 'group') AS handoff,
        sum(p_expiries) AS expiries,
        sum(p_force_releases) AS force_releases
    FROM
    (
        -- sealed
        SELECT
            if({by:String} = 'key', NULL, toNullable(toString(if({by:String} = 'namespace', namespace, class)))) AS grp_n,
            CAST(NULL AS Nullable(String)) AS key_n,
            toNullable(toStartOfInterval(hour, toIntervalSecond({bucketSeconds:UInt32}))) AS bucket,
            grants AS p_grants, holders AS p_holders, wait AS p_wait, ended AS p_ended, hold AS p_hold,
            toUInt64(0) AS p_handoffs,
            arrayReduce('quantilesExactState(0.5, 0.95)', CAST([], 'Array(Int64)')) AS p_handoff,
            expiries AS p_expiries, force_releases AS p_force_releases
        FROM {db:Identifier}.contention_hours
        WHERE (cluster, toUInt32(hour), seal_id, attempt) IN (
            SELECT cluster, toUInt32(hour), seal_id, attempt FROM {db:Identifier}.contention_seals FINAL
            WHERE arrayExists((c, f, t) -> c = cluster AND f <= toUInt32(hour) AND toUInt32(hour) < t, {clusters:Array(String)}, {runFrom:Array(UInt32)}, {runTo:Array(UInt32)}))
            AND ({namespace:String} = '' OR namespace = {namespace:String})
            AND
-- @include grants/scopeBoundHours.sql
            AND ({class:String} = '' OR class = {class:String})

        UNION ALL
        -- pending: the grant was counted when sealed, its end is read now
        SELECT
            if({by:String} = 'key', NULL, toNullable(toString(if({by:String} = 'namespace', namespace, class)))) AS grp_n,
            CAST(NULL AS Nullable(String)) AS key_n,
            toNullable(toStartOfInterval(toDateTime(granted_at, 'UTC'), toIntervalSecond({bucketSeconds:UInt32}))) AS bucket,
            toUInt64(0) AS p_grants,
            uniqExactStateIf(holder, 0) AS p_holders,
            quantilesExactStateIf(0.5, 0.95, 0.99)(wait_ms, 0) AS p_wait,
            countIf(duration_ms IS NOT NULL) AS p_ended,
            quantilesExactStateIf(0.5, 0.99)(assumeNotNull(duration_ms), duration_ms IS NOT NULL) AS p_hold,
            toUInt64(0) AS p_handoffs,
            quantilesExactStateIf(0.5, 0.95)(toInt64(0), 0) AS p_handoff,
            countIf(end_kind = 'expiry') AS p_expiries,
            countIf(end_kind = 'force') AS p_force_releases
        FROM {db:Identifier}.grants FINAL
        PREWHERE (cluster, key, grant_revision, spool_id, timeline) IN (
                SELECT tupleElement(t, 1), tupleElement(t, 2), tupleElement(t, 3), tupleElement(t, 4), tupleElement(t, 5)
                FROM (SELECT arrayJoin(arrayZip({pendingClusters:Array(String)}, {pendingKeys:Array(String)},
                    arrayMap(x -> toUInt64(x), {pendingRevisions:Array(String)}), {pendingSpools:Array(String)}, {pendingTimelines:Array(UInt32)})) AS t))
            AND ({namespace:String} = '' OR namespace = {namespace:String})
            AND
-- @include grants/scopeBound.sql
            AND ({class:String} = '' OR class = {class:String})
        WHERE (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
        GROUP BY grp_n, bucket

        UNION ALL
        -- handoffs whose previous grant is in the window too
        SELECT
            if({by:String} = 'key', NULL, toNullable(toString(if({by:String} = 'namespace', namespace, class)))) AS grp_n,
            CAST(NULL AS Nullable(String)) AS key_n,
            toNullable(toStartOfInterval(hour, toIntervalSecond({bucketSeconds:UInt32}))) AS bucket,
            toUInt64(0) AS p_grants,
            uniqExactStateIf('', 0) AS p_holders,
            quantilesExactStateIf(0.5, 0.95, 0.99)(toUInt64(0), 0) AS p_wait,
            toUInt64(0) AS p_ended,
            quantilesExactStateIf(0.5, 0.99)(toInt64(0), 0) AS p_hold,
            count() AS p_handoffs,
            quantilesExactState(0.5, 0.95)(gap_ms) AS p_handoff,
            toUInt64(0) AS p_expiries,
            toUInt64(0) AS p_force_releases
        FROM {db:Identifier}.contention_handoffs
        WHERE (cluster, toUInt32(hour), seal_id, attempt) IN (
            SELECT cluster, toUInt32(hour), seal_id, attempt FROM {db:Identifier}.contention_seals FINAL
            WHERE arrayExists((c, f, t) -> c = cluster AND f <= toUInt32(hour) AND toUInt32(hour) < t, {clusters:Array(String)}, {runFrom:Array(UInt32)}, {runTo:Array(UInt32)}))
            AND pred_granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
            AND pred_granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
            AND ({namespace:String} = '' OR namespace = {namespace:String})
            AND
-- @include grants/scopeBoundHours.sql
            AND ({class:String} = '' OR class = {class:String})
        GROUP BY grp_n, bucket

        UNION ALL
        -- raw: role 1, a grant of no covered hour (groups and buckets); role 2, a grant of a top key (key rows; by key, groups)
        SELECT
            if(role = 1, if({by:String} = 'key', NULL, toNullable(toString(if({by:String} = 'namespace', namespace, class)))),
                         if({by:String} = 'key', toNullable(key), NULL)) AS grp_n,
            if(role = 2, toNullable(key), NULL) AS key_n,
            if(role = 1, toNullable(toStartOfInterval(toDateTime(granted_at, 'UTC'), toIntervalSecond({bucketSeconds:UInt32}))), NULL) AS bucket,
            count() AS p_grants,
            uniqExactState(holder) AS p_holders,
            quantilesExactState(0.5, 0.95, 0.99)(wait_ms) AS p_wait,
            countIf(duration_ms IS NOT NULL) AS p_ended,
            quantilesExactStateIf(0.5, 0.99)(assumeNotNull(duration_ms), duration_ms IS NOT NULL) AS p_hold,
            countIf(handoff_gap) AS p_handoffs,
            quantilesExactStateIf(0.5, 0.95)(gap_ms, handoff_gap) AS p_handoff,
            countIf(end_kind = 'expiry') AS p_expiries,
            countIf(end_kind = 'force') AS p_force_releases
        FROM
        (
            SELECT namespace, class, key, holder, wait_ms, duration_ms, end_kind, granted_at, handoff_gap, gap_ms,
                arrayJoin(arrayFilter(r -> (r = 1 AND NOT covered) OR (r = 2 AND is_top), [1, 2])) AS role
            FROM
            (
                SELECT namespace, class, key, holder, wait_ms, duration_ms, end_kind, granted_at,
                    key IN {topKeys:Array(String)} AS is_top,
                    arrayExists((c, f, t) -> c = cluster AND f <= toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) AND toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) < t, {clusters:Array(String)}, {runFrom:Array(UInt32)}, {runTo:Array(UInt32)}) AS covered,
                    lagInFrame(end_kind) OVER w = 'release' AND lagInFrame(unprotected) OVER w = 0 AND unprotected = 0 AS handoff_gap,
                    toUnixTimestamp64Milli(granted_at) - toUnixTimestamp64Milli(lagInFrame(assumeNotNull(ended_at)) OVER w) AS gap_ms
                FROM {db:Identifier}.grants FINAL
                PREWHERE granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
                    AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                    AND ({namespace:String} = '' OR namespace = {namespace:String})
                    AND
-- @include grants/scopeBound.sql
                    AND ({class:String} = '' OR class = {class:String})
                    AND (key IN {topKeys:Array(String)} OR key IN (
                        SELECT key FROM {db:Identifier}.grants
                        PREWHERE granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
                            AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                            AND ({namespace:String} = '' OR namespace = {namespace:String})
                            AND
-- @include grants/scopeBound.sql
                            AND ({class:String} = '' OR class = {class:String})
                            AND NOT arrayExists((c, f, t) -> c = cluster AND f <= toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) AND toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) < t, {clusters:Array(String)}, {runFrom:Array(UInt32)}, {runTo:Array(UInt32)})))
                WHERE (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
                WINDOW w AS (PARTITION BY cluster, key ORDER BY grant_revision, spool_id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
            )
        )
        GROUP BY grp_n, key_n, bucket
    )
    GROUP BY kind, grp, key, bucket_ms
)
)
WHERE kind = 'bucket' OR (kind = 'key' AND rank <= {top:UInt32}) OR (kind = 'group' AND rank <= {groupLimit:UInt32})
ORDER BY kind, rank
