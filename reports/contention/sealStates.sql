-- Seals hours of a cluster, part 1 of 4: per hour, namespace and class, the
-- contention figures as -State values (sql/130), over every timeline's grants,
-- each once, as of the checkpoint {checkpoint}: rows written for revisions
-- above it are left out before FINAL (a grant ended above it reads as held:
-- sealPending.sql lists it, and the report reads its end raw).
-- Parameters: {db:Identifier} {sealId:UInt64} {attempt:UUID} (and those of sealHourGrants.sql)
INSERT INTO {db:Identifier}.contention_hours
    (cluster, hour, seal_id, attempt, namespace, class, grants, holders, wait, ended, hold, expiries, force_releases)
SELECT
    cluster, toStartOfHour(toDateTime(granted_at, 'UTC')) AS hour, {sealId:UInt64}, {attempt:UUID}, namespace, class,
    count(),
    uniqExactState(holder),
    quantilesExactState(0.5, 0.95, 0.99)(wait_ms),
    countIf(duration_ms IS NOT NULL),
    quantilesExactStateIf(0.5, 0.99)(assumeNotNull(duration_ms), duration_ms IS NOT NULL),
    countIf(end_kind = 'expiry'),
    countIf(end_kind = 'force')
-- @include reports/contention/sealHourGrants.sql
GROUP BY cluster, hour, namespace, class
