-- The highest checkpoint of one cluster written at or after a moment (the
-- current timeline's detection): older rows belong to a rolled-back timeline.
-- Parameters: {db:Identifier} {cluster:String} {sinceMs:Int64}
SELECT toString(max(revision)) AS revision, count() AS n
FROM {db:Identifier}.checkpoints
WHERE cluster = {cluster:String} AND updated_at >= fromUnixTimestamp64Milli({sinceMs:Int64})
