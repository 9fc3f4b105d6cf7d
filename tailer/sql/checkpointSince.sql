-- The highest checkpoint of one cluster written at or after a moment (the
-- current timeline's detection): older rows belong to a rolled-back timeline.
-- {unfencedOnly} = 1: only rows written before sql/110 (term 0) count — rows
-- with a term name their timeline and are read by timeline (checkpointFenced.sql),
-- so a deposed leader's late row of the old timeline never counts here.
-- Parameters: {db:Identifier} {cluster:String} {sinceMs:Int64} {unfencedOnly:UInt8}
SELECT toString(max(revision)) AS revision, count() AS n
FROM {db:Identifier}.checkpoints
WHERE cluster = {cluster:String} AND updated_at >= fromUnixTimestamp64Milli({sinceMs:Int64})
  AND ({unfencedOnly:UInt8} = 0 OR term = 0)
