-- The wall-clock span of one gap: the time of the last captured event before
-- it and of the first after it (NULL when there is none). events is ordered
-- by (cluster, revision), so each bound is an index range read in order.
-- Parameters: {db:Identifier} {cluster:String} {fromRevision:UInt64} {toRevision:UInt64}
SELECT
    (
        SELECT toNullable(toUnixTimestamp64Milli(wall_time)) FROM {db:Identifier}.events
        WHERE cluster = {cluster:String} AND revision < {fromRevision:UInt64} AND op IN ('put', 'delete') AND wall_time > '2000-01-01'
        ORDER BY revision DESC LIMIT 1
    ) AS before_ms,
    (
        SELECT toNullable(toUnixTimestamp64Milli(wall_time)) FROM {db:Identifier}.events
        WHERE cluster = {cluster:String} AND revision > {toRevision:UInt64} AND op IN ('put', 'delete') AND wall_time > '2000-01-01'
        ORDER BY revision ASC LIMIT 1
    ) AS after_ms
