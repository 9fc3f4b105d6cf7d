-- Where sealing stands for a cluster: the checkpoint in effect, as the tailer
-- reads it (grants/checkpointInEffect.sql: after an etcd restore, the new
-- timeline's, never a rolled-back timeline's higher one), the time it has
-- passed (the newest wall time of the events just below it: hours ending
-- before that are complete up to late grants, which a seal's fingerprint
-- catches) and the newest restore generation (a restore re-marks rows: every
-- seal taken before it is stale).
-- Parameters: {db:Identifier} {cluster:String}
WITH (
    SELECT toUInt64OrZero(any(revision)) FROM (
-- @include grants/checkpointInEffect.sql
    ) WHERE cluster = {cluster:String}
) AS cp
SELECT
    toString(cp) AS checkpoint,
    toString(ifNull((
        SELECT toUnixTimestamp64Milli(max(wall_time)) FROM {db:Identifier}.events
        WHERE cluster = {cluster:String} AND revision <= cp AND revision + 10000 > cp
    ), 0)) AS passed_ms,
    ifNull((SELECT max(generation) FROM {db:Identifier}.etcd_timelines WHERE cluster = {cluster:String}), 0) AS generation
