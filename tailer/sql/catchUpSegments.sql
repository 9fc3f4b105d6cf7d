-- The durable intervals earlier catch-ups of this cluster and timeline left
-- above the checkpoint (sql/160), every row with its term and proof
-- (sql/230): tailer/watch/catchUpSegments.ts keeps the proven ones, clips and
-- merges them (a window's highest floor wins there).
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32} {checkpoint:UInt64}
SELECT toString(from_revision) AS start, toString(through) AS floor, toString(term) AS term_of, proof
FROM {db:Identifier}.catchup_segments
WHERE cluster = {cluster:String} AND timeline = {timeline:UInt32} AND through > {checkpoint:UInt64}
ORDER BY from_revision, through
