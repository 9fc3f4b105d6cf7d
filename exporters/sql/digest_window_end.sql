-- Where a digest window that starts at {lo} ends: the highest revision up to
-- {hi} whose rows from {lo} on hold at most {budget} bytes of text (value,
-- previous value, holder and key make a row big: etcd takes values up to
-- 1.5 MiB), and never below the first revision that has rows — one
-- revision's events are read together however many there are (a lease
-- expiry). Every version of a row counts (no FINAL): an estimate from above.
-- Parameters: {db:Identifier} {cluster:String} {lo:UInt64} {hi:UInt64} {budget:UInt64}
SELECT toString(if(countIf(total <= {budget:UInt64}) = 0, min(revision), maxIf(revision, total <= {budget:UInt64}))) AS end
FROM
(
    SELECT revision, sum(bytes) OVER (ORDER BY revision ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS total
    FROM
    (
        SELECT revision, sum(length(value) + length(prev_value) + length(holder) + length(key) + 512) AS bytes
        FROM {db:Identifier}.events
        PREWHERE cluster = {cluster:String} AND revision >= {lo:UInt64} AND revision <= {hi:UInt64}
        GROUP BY revision
    )
)
