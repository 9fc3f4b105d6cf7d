-- Plans a grants export: the (cluster, key) at which each chunk of about
-- {chunkRows} rows ends (inclusive), with the cumulative row count there. The
-- last row is always the end of the data, so its `cum` is the total.
-- Exact under replays (FINAL). Filters on columns a grant never changes go to
-- PREWHERE (applied before FINAL merges a grant's open and closed rows). An
-- empty filter string (hasToken 0) means "no filter". Range: granted_at in [from, to).
-- Parameters: {db:Identifier} {cluster:String} {key:String} {keyPrefix:String} {holder:String} {class:String} {namespace:String} {hasToken:UInt8} {token:UInt64} {fromMs:Int64} {toMs:Int64} {chunkRows:UInt64}
SELECT cluster, key, toString(running) AS cum
FROM
(
    SELECT cluster, key, c,
        sum(c) OVER (ORDER BY cluster, key ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running,
        sum(c) OVER () AS total
    FROM
    (
        SELECT cluster, key, count() AS c
        FROM {db:Identifier}.grants FINAL
        PREWHERE ({cluster:String} = '' OR cluster = {cluster:String})
            AND ({key:String} = '' OR key = {key:String})
            AND ({keyPrefix:String} = '' OR startsWith(key, {keyPrefix:String}))
            AND ({holder:String} = '' OR holder = {holder:String})
            AND ({class:String} = '' OR class = {class:String})
            AND ({namespace:String} = '' OR namespace = {namespace:String})
            AND ({hasToken:UInt8} = 0 OR token = {token:UInt64})
            AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
            AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        GROUP BY cluster, key
    )
)
WHERE intDiv(running, {chunkRows:UInt64}) > intDiv(running - c, {chunkRows:UInt64}) OR running = total
ORDER BY cluster, key
