-- The gaps (compaction, restore) the tailer recorded for a cluster within a
-- digest period [fromMs, toMs) of detection time.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64}
SELECT toString(from_revision) AS fromRevision, toString(to_revision) AS toRevision, toString(kind) AS kind, reason, toString(generation) AS generation,
       toString(toUnixTimestamp64Milli(detected_at)) AS detectedAtMs
FROM {db:Identifier}.gaps FINAL
WHERE cluster = {cluster:String}
    AND detected_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND detected_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
ORDER BY from_revision, identity
SETTINGS prefer_column_name_to_alias = 1
