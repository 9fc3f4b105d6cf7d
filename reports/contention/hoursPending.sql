-- The covered hours' grants that were held when sealed (contention_pending):
-- hours.sql reads their end raw, by identity. Covered hours as in hours.sql.
-- Parameters: {db:Identifier} {clusters:Array(String)} {runFrom:Array(UInt32)} {runTo:Array(UInt32)}
SELECT cluster, key, toString(grant_revision) AS grant_revision, spool_id, timeline
FROM {db:Identifier}.contention_pending
WHERE (cluster, toUInt32(hour), seal_id, attempt) IN (
    SELECT cluster, toUInt32(hour), seal_id, attempt FROM {db:Identifier}.contention_seals FINAL
    WHERE arrayExists((c, f, t) -> c = cluster AND f <= toUInt32(hour) AND toUInt32(hour) < t, {clusters:Array(String)}, {runFrom:Array(UInt32)}, {runTo:Array(UInt32)}))
