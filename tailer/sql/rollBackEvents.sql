-- Keeps the captured events a restore rolled back (revisions above the
-- divergence) in rolled_back_events, tagged with the restore's generation.
-- Parameters: {db:Identifier} {cluster:String} {after:UInt64} {generation:UInt32}
INSERT INTO {db:Identifier}.rolled_back_events (generation, cluster, revision, key, event_type, holder, token, grant_revision, wall_time, value, prev_value)
SELECT {generation:UInt32}, cluster, revision, key, event_type, holder, token, grant_revision, wall_time, value, prev_value
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String} AND revision > {after:UInt64}
