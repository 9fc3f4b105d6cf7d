-- Timeline cells, for lanes too busy to draw a bar per grant: per key and
-- time bucket (bucketSeconds, aligned to the epoch), how long the key was held
-- in the bucket (each hold is split over the buckets it spans, clipped to the
-- window; an open hold runs to `to`), grants started, distinct holders, the
-- holder that held it longest, and expiries and force-releases ending in the
-- bucket; foreign grants (put straight into etcd, not by the lock API)
-- started in the bucket and holds deleted by hand (no marker, lease still
-- alive) ending in it. Aggregated here so a 30-day window of a busy cluster reaches the
-- browser as at most lanes × buckets cells.
-- Parameters: {db:Identifier} {lanes:Array(String)} {cluster:String} {fromMs:Int64} {toMs:Int64} {bucketSeconds:UInt32}
SELECT
    key,
    bucket_ms,
    countIf(start_ms >= bucket_ms) AS grants,
    uniqExact(holder) AS holders,
    topKWeighted(1)(holder, toUInt64(held + 1))[1] AS top_holder,
    sum(held) AS held_ms,
    countIf(end_kind = 'expiry' AND end_ms >= bucket_ms AND end_ms < bucket_ms + step) AS expiries,
    countIf(end_kind = 'force' AND end_ms >= bucket_ms AND end_ms < bucket_ms + step) AS force_releases,
    countIf(unprotected = 1 AND start_ms >= bucket_ms) AS unprotected,
    countIf(origin = 'foreign' AND start_ms >= bucket_ms) AS foreign_grants,
    countIf(end_kind = 'deleted' AND end_ms >= bucket_ms AND end_ms < bucket_ms + step) AS deleted
FROM
(
    SELECT
        key, holder, end_kind, unprotected, origin, start_ms, end_ms, step,
        -- Buckets [start, end): a hold ending on a bucket edge does not reach the next bucket; a zero-length hold has one.
        arrayJoin(range(intDiv(s, step) * step, greatest(e, s + 1), step)) AS bucket_ms,
        least(e, bucket_ms + step) - greatest(s, bucket_ms) AS held
    FROM
    (
        SELECT
            key, holder, end_kind, unprotected, origin,
            toInt64({bucketSeconds:UInt32}) * 1000 AS step,
            toUnixTimestamp64Milli(granted_at) AS start_ms,
            ifNull(toUnixTimestamp64Milli(ended_at), {toMs:Int64}) AS end_ms,
            greatest(start_ms, {fromMs:Int64}) AS s,
            greatest(least(end_ms, {toMs:Int64}), s) AS e
        FROM {db:Identifier}.grants FINAL
        PREWHERE key IN {lanes:Array(String)}
            AND ({cluster:String} = '' OR cluster = {cluster:String})
            AND
-- @include grants/scopeBound.sql
            AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        WHERE (ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
            AND (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
    )
)
GROUP BY key, bucket_ms
ORDER BY key, bucket_ms
