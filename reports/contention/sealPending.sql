-- Seals hours of a cluster, part 2 of 4: the grants of those hours still held
-- as of the checkpoint (sealStates.sql counted their grant, not their end).
-- Parameters: {db:Identifier} {sealId:UInt64} {attempt:UUID} (and those of sealHourGrants.sql)
INSERT INTO {db:Identifier}.contention_pending (cluster, hour, seal_id, attempt, key, grant_revision, spool_id, timeline)
SELECT cluster, toStartOfHour(toDateTime(granted_at, 'UTC')), {sealId:UInt64}, {attempt:UUID}, key, grant_revision, spool_id, timeline
-- @include reports/contention/sealHourGrants.sql
    AND end_kind = ''
