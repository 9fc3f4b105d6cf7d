-- Plans a grants export: the (cluster, key) at which each chunk of about
-- {chunkRows} rows ends (inclusive), with the cumulative row count there. The
-- last row is always the end of the data, so its `cum` is the total.
-- Exact under replays (FINAL). Which grants: the grant filter
-- (grants/filter*.sql) with the plan's window rule.
-- Parameters: {db:Identifier} {chunkRows:UInt64}
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
        PREWHERE
-- @include grants/filterPrewhere.sql
        WHERE
-- @include grants/filterWhere.sql
        GROUP BY cluster, key
    )
)
WHERE intDiv(running, {chunkRows:UInt64}) > intDiv(running - c, {chunkRows:UInt64}) OR running = total
ORDER BY cluster, key
