-- Seals hours of a cluster, part 1 of 4: per hour, namespace and class, the
-- contention figures as -State values (sql/130), over every timeline's grants,
-- each once, as of the checkpoint {checkpoint}: rows written for revisions
-- above it are left out before FINAL (a grant ended above it reads as held:
-- sealPending.sql lists it, and the report reads its end raw).
-- Parameters: {db:Identifier} {cluster:String} {hours:Array(UInt32)} {checkpoint:UInt64} {sealId:UInt64}
INSERT INTO {db:Identifier}.contention_hours
    (cluster, hour, seal_id, namespace, class, grants, holders, wait, ended, hold, expiries, force_releases)
SELECT
    cluster, toStartOfHour(toDateTime(granted_at, 'UTC')) AS hour, {sealId:UInt64}, namespace, class,
    count(),
    uniqExactState(holder),
    quantilesExactState(0.5, 0.95, 0.99)(wait_ms),
    countIf(duration_ms IS NOT NULL),
    quantilesExactStateIf(0.5, 0.99)(assumeNotNull(duration_ms), duration_ms IS NOT NULL),
    countIf(end_kind = 'expiry'),
    countIf(end_kind = 'force')
FROM {db:Identifier}.grants FINAL
PREWHERE cluster = {cluster:String}
    AND granted_at >= toDateTime(arrayMin({hours:Array(UInt32)}), 'UTC')
    AND granted_at < toDateTime(arrayMax({hours:Array(UInt32)}) + 3600, 'UTC')
    AND toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) IN {hours:Array(UInt32)}
    AND grant_revision <= {checkpoint:UInt64} AND row_version <= {checkpoint:UInt64}
WHERE (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
GROUP BY cluster, hour, namespace, class
