-- Plans a raw-events export of one cluster over [from, to) of wall time: the
-- revision at which each chunk of about {chunkRows} rows, or about
-- {chunkBytes} bytes of row text, ends (inclusive; all events of one revision
-- stay in one chunk), with the cumulative count. A chunk is one query's
-- output held at once (the embedded engine answers it whole): values of up to
-- 64 KiB each (sql/290) would make 500 000 rows tens of gigabytes. The last
-- row's `cum` is the total. Exact under replays (FINAL).
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {chunkRows:UInt64} {chunkBytes:UInt64}
SELECT toString(revision) AS revision, toString(running) AS cum
FROM
(
    SELECT revision, c, b,
        sum(c) OVER (ORDER BY revision ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running,
        sum(b) OVER (ORDER BY revision ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_bytes,
        sum(c) OVER () AS total
    FROM
    (
        SELECT revision, count() AS c, sum(length(value) + length(prev_value) + length(key) + length(holder) + 512) AS b
        FROM {db:Identifier}.events FINAL
        PREWHERE cluster = {cluster:String}
            AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
            AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        GROUP BY revision
    )
)
WHERE intDiv(running, {chunkRows:UInt64}) > intDiv(running - c, {chunkRows:UInt64})
   OR intDiv(running_bytes, {chunkBytes:UInt64}) > intDiv(running_bytes - b, {chunkBytes:UInt64})
   OR running = total
ORDER BY revision
