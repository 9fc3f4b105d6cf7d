-- The highest raft applied index recorded for one timeline of a cluster
-- (sql/150; tailer/recovery/raftMarks.ts). No row: nothing recorded yet (n = 0).
-- Parameters: {db:Identifier} {cluster:String} {generation:UInt32}
SELECT toString(max(raft_index)) AS raft_index, count() AS n
FROM {db:Identifier}.etcd_raft_marks
WHERE cluster = {cluster:String} AND generation = {generation:UInt32}
