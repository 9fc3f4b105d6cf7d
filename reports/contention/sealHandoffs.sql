-- Seals hours of a cluster, part 3 of 4: each handoff granted in those hours
-- (a protected grant whose previous grant on the key, in the order of
-- contention.sql's window, was released and protected) with that previous
-- grant's grant time and the gap. The window reads the keys' grants back to
-- {lookbackMs} = the first hour − the longest report window: a grant before
-- that is before every window that holds one of these hours, so it is what
-- contention.sql's PREWHERE would drop too. The report counts a handoff when
-- its previous grant is in the report's window (contention.sql's "both in
-- the window"); that is exact for regular grants (sealIrregular.sql).
-- Parameters: {db:Identifier} {hours:Array(UInt32)} {sealId:UInt64} {attempt:UUID} (and those of sealKeyGrants.sql)
INSERT INTO {db:Identifier}.contention_handoffs (cluster, hour, seal_id, attempt, namespace, class, pred_granted_at, gap_ms)
SELECT cluster, toStartOfHour(toDateTime(granted_at, 'UTC')), {sealId:UInt64}, {attempt:UUID}, namespace, class, pred_granted_at, gap_ms
FROM
(
    SELECT cluster, namespace, class, granted_at,
        lagInFrame(end_kind) OVER w = 'release' AND lagInFrame(unprotected) OVER w = 0 AND unprotected = 0 AS handoff_gap,
        lagInFrame(granted_at) OVER w AS pred_granted_at,
        toUnixTimestamp64Milli(granted_at) - toUnixTimestamp64Milli(lagInFrame(assumeNotNull(ended_at)) OVER w) AS gap_ms
-- @include reports/contention/sealKeyGrants.sql
    WINDOW w AS (PARTITION BY cluster, key ORDER BY grant_revision, spool_id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
)
WHERE handoff_gap AND toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) IN {hours:Array(UInt32)}
