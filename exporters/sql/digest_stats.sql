-- How many events a digest period (digest_range.sql) holds now and the newest
-- ingested_at among them: the digest worker re-hashes a period only when
-- either differs from its digest (a late replay, a restore's marks, a
-- spooled grant shipped late).
-- Parameters: {db:Identifier} {cluster:String} {lo:UInt64} {hi:UInt64}
SELECT toString(count()) AS count, toString(max(toUnixTimestamp64Milli(ingested_at))) AS ingestedThroughMs
FROM {db:Identifier}.events FINAL
PREWHERE cluster = {cluster:String} AND (revision = 0 OR (revision >= {lo:UInt64} AND revision <= {hi:UInt64}))
WHERE
-- @include exporters/sql/digest_range.sql
