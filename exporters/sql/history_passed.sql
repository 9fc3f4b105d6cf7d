-- How far a cluster's capture has got: the tailer's checkpoint (every event up
-- to it is in the store) and the time it has passed (the newest wall time of
-- the events just below it). A day of history is written only once that time
-- is past the day's end (parquetHistory.ts): a file is complete for good once
-- its manifest exists, so a day written early would stay short.
-- Parameters: {db:Identifier} {cluster:String}
WITH (SELECT max(revision) FROM {db:Identifier}.checkpoints WHERE cluster = {cluster:String}) AS cp
SELECT
    toString(ifNull(cp, 0)) AS checkpoint,
    toString(ifNull((
        SELECT toUnixTimestamp64Milli(max(wall_time)) FROM {db:Identifier}.events
        WHERE cluster = {cluster:String} AND revision <= cp AND revision + 10000 > cp
    ), 0)) AS passed_ms
