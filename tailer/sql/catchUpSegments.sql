-- The durable intervals earlier catch-ups of this cluster and timeline left
-- above the checkpoint (sql/160): per window start, its highest durable
-- floor. tailer/catchUpSegments.ts clips and merges them.
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32} {checkpoint:UInt64}
SELECT toString(from_revision) AS start, toString(max(through)) AS floor
FROM {db:Identifier}.catchup_segments
WHERE cluster = {cluster:String} AND timeline = {timeline:UInt32} AND through > {checkpoint:UInt64}
GROUP BY from_revision
ORDER BY from_revision
