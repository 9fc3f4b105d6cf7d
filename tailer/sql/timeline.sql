-- The newest etcd timeline the tailer recorded for one cluster (restores.ts).
-- Parameters: {db:Identifier} {cluster:String}
SELECT generation, timeline, cluster_id, resume_revision, toUnixTimestamp64Milli(detected_at) AS detected_ms
FROM {db:Identifier}.etcd_timelines FINAL
WHERE cluster = {cluster:String}
ORDER BY generation DESC
LIMIT 1
