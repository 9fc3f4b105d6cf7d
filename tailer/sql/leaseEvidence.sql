-- The lease witness's saved evidence (sql/057) that still proves something:
-- per lease, the latest instant before which it could not have expired, if
-- that is after {nowMs}.
-- Parameters: {db:Identifier} {cluster:String} {nowMs:Int64}
SELECT lease, toString(max(alive_until_ms)) AS until_ms
FROM {db:Identifier}.lease_evidence
WHERE cluster = {cluster:String} AND alive_until_ms > {nowMs:Int64}
GROUP BY lease
