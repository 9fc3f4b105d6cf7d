-- The proven checkpoint rows of one timeline of a cluster (checkpoint_proofs, sql/230), highest first, bounded:
-- one whose proof holds says the tailer captured under that timeline, so its restore was finished and its
-- timeline record written (restores.ts unfinishedRestore: a restore gap whose timeline record is gone is not
-- finished twice).
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32} {limit:UInt32}
SELECT toString(revision) AS rev, toString(term) AS term_of, leader, proof
FROM {db:Identifier}.checkpoint_proofs
WHERE cluster = {cluster:String} AND timeline = {timeline:UInt32} AND proof != ''
ORDER BY term DESC, revision DESC
LIMIT {limit:UInt32}
