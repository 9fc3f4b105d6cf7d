-- The latest wall time captured at or just below a revision: where a gap starts, in time.
-- Parameters: {db:Identifier} {cluster:String} {from:UInt64} {upTo:UInt64}
SELECT toString(toUnixTimestamp64Milli(max(wall_time))) AS ms, count() AS n
FROM {db:Identifier}.events
WHERE cluster = {cluster:String} AND revision > {from:UInt64} AND revision <= {upTo:UInt64} AND wall_time > 0
