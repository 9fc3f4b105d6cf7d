-- One cluster's checkpoint in one etcd timeline as fenced (sql/110): the
-- highest term's highest revision, its term and writer (n = 0: none).
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32}
SELECT toString(argMax(revision, fence)) AS revision, toString(argMax(term, fence)) AS term, argMax(leader, fence) AS leader, count() AS n
FROM {db:Identifier}.checkpoints_fenced
WHERE cluster = {cluster:String} AND timeline = {timeline:UInt32}
