-- How far each timeline of a cluster is durable, grant rows included: the
-- highest checkpoint the tailer wrote for it (the tailer moves a checkpoint
-- only once the batch's events and grants are written), from
-- checkpoint_proofs (sql/230: each term's highest, which no merge takes away)
-- and checkpoints_fenced (sql/110: the rows of a tailer without a key). The
-- grants check judges every event at or below it whatever its ingested_at,
-- which no digest hashes. A row added only raises it (a stricter check);
-- deleting rows lowers it to the settle window's say alone.
-- Parameters: {db:Identifier} {cluster:String}
SELECT concat(cluster, '/', toString(timeline)) AS key, toString(max(revision)) AS revision
FROM
(
    SELECT cluster, timeline, revision FROM {db:Identifier}.checkpoint_proofs WHERE {cluster:String} = '' OR cluster = {cluster:String}
    UNION ALL
    SELECT cluster, timeline, revision FROM {db:Identifier}.checkpoints_fenced WHERE {cluster:String} = '' OR cluster = {cluster:String}
)
GROUP BY cluster, timeline
