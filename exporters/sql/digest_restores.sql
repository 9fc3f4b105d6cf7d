-- The etcd restores (new timelines, generation > 0) the tailer recorded for a
-- cluster within a digest period [fromMs, toMs) of detection time.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64}
SELECT toString(generation) AS generation, cluster_id AS clusterId, previous_cluster_id AS previousClusterId, toString(diverged_after) AS divergedAfter,
       toString(restored_head) AS restoredHead, toString(resume_revision) AS resumeRevision, reason, toString(toUnixTimestamp64Milli(detected_at)) AS detectedAtMs
FROM {db:Identifier}.etcd_timelines FINAL
WHERE cluster = {cluster:String} AND generation > 0
    AND detected_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND detected_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
ORDER BY generation
SETTINGS prefer_column_name_to_alias = 1
