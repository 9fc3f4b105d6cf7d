-- How far a cluster's capture has got, for writing a day of history
-- (parquetHistory.ts historyDayNotOver): the checkpoint the tailer leader
-- last published (tailer_status: its own, current-timeline checkpoint;
-- 0 when no tailer ever ran) and the time it has passed, the newest wall
-- time of the events just below it — only the current timeline's, never a
-- spool row (revision 0: its time is the fail-open writer's) nor a foreign
-- write (its time is whatever the writer chose), and never past now (a
-- hold's `at` from a clock running fast, or a forged one in 2299, says
-- nothing of what was captured).
-- Parameters: {db:Identifier} {cluster:String}
WITH (SELECT argMax(checkpoint, updated_at) FROM {db:Identifier}.tailer_status WHERE cluster = {cluster:String}) AS cp
SELECT
    toString(ifNull(cp, 0)) AS checkpoint,
    toString(least(toUnixTimestamp64Milli(now64(3)), ifNull((
        SELECT toUnixTimestamp64Milli(max(wall_time)) FROM {db:Identifier}.events
        WHERE cluster = {cluster:String} AND revision <= cp AND revision + 10000 > cp AND revision > 0
          AND superseded_by = 0 AND origin != 'foreign' AND op != 'spool'
    ), 0))) AS passed_ms
