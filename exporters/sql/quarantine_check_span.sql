-- The revisions the quarantine check (quarantineCheck.ts) judges for the
-- range [from, to) of one cluster: from the first change timed at or after
-- {from} up to the one before the first timed at or after {to} (none: no
-- end). Consecutive ranges so cover every revision once, and the latest
-- range every entry above the last captured change (one no change backs,
-- at a revision not captured yet, is judged, not passed over).
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64}
SELECT
    toString(ifNull(
        (SELECT minOrNull(revision) FROM {db:Identifier}.events
         WHERE cluster = {cluster:String} AND revision > 0 AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')),
        (SELECT ifNull(maxOrNull(revision), 0) + 1 FROM {db:Identifier}.events WHERE cluster = {cluster:String}))) AS lo,
    toString(ifNull(
        (SELECT minOrNull(revision) FROM {db:Identifier}.events
         WHERE cluster = {cluster:String} AND revision > 0 AND wall_time >= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')) - 1,
        toUInt64('18446744073709551615'))) AS hi
