-- Seals hours of a cluster, part 4 of 4: per hour and key, its grants (the
-- report's hottest keys are found from these), as of the checkpoint.
-- Parameters: {db:Identifier} {sealId:UInt64} {attempt:UUID} (and those of sealHourGrants.sql)
INSERT INTO {db:Identifier}.contention_key_hours (cluster, hour, seal_id, attempt, namespace, class, key, grants)
SELECT cluster, toStartOfHour(toDateTime(granted_at, 'UTC')) AS hour, {sealId:UInt64}, {attempt:UUID}, namespace, class, key, count()
-- @include reports/contention/sealHourGrants.sql
GROUP BY cluster, hour, namespace, class, key
