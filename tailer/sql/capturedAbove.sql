-- The highest revision of the current timeline captured above the checkpoint: rows a run made durable
-- while its checkpoint was held back (a leadership check etcd did not answer, a kill before the next
-- checkpoint write). A restore to a snapshot above the checkpoint rolls those rows back, and only they
-- can show it: the checkpoint's own witnesses are still intact there (tailer/recovery/startDecision.ts).
-- Bounded below by the checkpoint: a few rows on any history. 0 when there are none.
-- Parameters: {db:Identifier} {cluster:String} {checkpoint:UInt64}
SELECT toString(max(revision)) AS top -- not `AS revision`: the alias would shadow the column in WHERE
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String} AND revision > {checkpoint:UInt64} AND superseded_by = 0
