-- 150: how far etcd's raft log had got, per cluster and timeline — a restore
-- proof that does not depend on what was written (issue 21 item 3's last hole).
-- A raft group's committed index never goes back while the group lives; a
-- snapshot restore (etcdutl, with or without --bump-revision) or a rebuild
-- starts a new log near 0 under the same cluster id. So once a tailer has seen
-- an applied index I in a timeline, an etcd whose leader reports a committed
-- index below I was restored or rebuilt — even when every key the tailer could
-- check was written fresh after a snapshot taken after its last clock write
-- (the witnesses, startDecision.ts, cannot see that case on a bumped restore).
-- max is idempotent: any replica may record, in any order; a value read from a
-- restored etcd before the restore was found is lower and changes nothing.
-- Parameters: {db:Identifier}. Idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.etcd_raft_marks
(
    cluster     LowCardinality(String),
    generation  UInt32,
    raft_index  SimpleAggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree
ORDER BY (cluster, generation);
