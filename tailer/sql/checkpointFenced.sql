-- One cluster's checkpoint in one etcd timeline as fenced (sql/110): the
-- highest term's highest revision, its term and writer (n = 0: none).
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32}
SELECT toString(argMax(revision, replace_version)) AS revision, toString(argMax(term, replace_version)) AS term, argMax(leader, replace_version) AS leader, count() AS n
FROM {db:Identifier}.checkpoints_fenced
WHERE cluster = {cluster:String} AND timeline = {timeline:UInt32}
