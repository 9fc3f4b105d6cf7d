-- Tailer lag over time: per cluster and time bucket (bucketSeconds, aligned to
-- the epoch), the worst lag in seconds and revisions, the newest checkpoint
-- and how many status samples the tailers published (none: no tailer ran).
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {bucketSeconds:UInt32}
SELECT
    cluster,
    toUnixTimestamp(toStartOfInterval(toDateTime(at, 'UTC'), toIntervalSecond({bucketSeconds:UInt32}))) * 1000 AS bucket_ms,
    max(lag_seconds) AS lag_seconds_max,
    max(lag_revisions) AS lag_revisions_max,
    max(checkpoint) AS checkpoint,
    count() AS samples
FROM {db:Identifier}.tailer_lag_history
WHERE ({cluster:String} = '' OR cluster = {cluster:String})
    AND at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
    AND at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
GROUP BY cluster, bucket_ms
ORDER BY cluster, bucket_ms
