-- The checkpoint rows of one cluster that carry a proof (sql/230: kept in
-- checkpoint_proofs, which no merge of `checkpoints` empties), the
-- current timeline's first, each timeline's highest term and revision
-- first: tailer/recovery/provenPosition.ts takes the first whose proof holds (restores.ts asks
-- whether one of a timeline holds: its restore was finished). Bounded:
-- a store flooded with forged rows makes the start replay, never read on.
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32} {limit:UInt32}
SELECT toString(revision) AS rev, toString(term) AS term_of, leader, timeline, proof
FROM {db:Identifier}.checkpoint_proofs
WHERE cluster = {cluster:String}
ORDER BY timeline = {timeline:UInt32} DESC, term DESC, revision DESC
LIMIT {limit:UInt32}
