-- Where sealing stands for a cluster: the tailer's checkpoint (every event up
-- to it is captured), the time it has passed (the newest wall time of the
-- events just below it: hours ending before that are complete up to late
-- grants, which a seal's fingerprint catches) and the newest restore
-- generation (a restore re-marks rows: every seal taken before it is stale).
-- Parameters: {db:Identifier} {cluster:String}
WITH (SELECT max(revision) FROM {db:Identifier}.checkpoints WHERE cluster = {cluster:String}) AS cp
SELECT
    toString(cp) AS checkpoint,
    toString(ifNull((
        SELECT toUnixTimestamp64Milli(max(wall_time)) FROM {db:Identifier}.events
        WHERE cluster = {cluster:String} AND revision <= cp AND revision + 10000 > cp
    ), 0)) AS passed_ms,
    ifNull((SELECT max(generation) FROM {db:Identifier}.etcd_timelines WHERE cluster = {cluster:String}), 0) AS generation
