-- One cluster's proven checkpoint rows (sql/230), each with the id
-- checkpointsWrite.sql picks it by.
-- Parameters: {db:Identifier} {cluster:String}
SELECT concat(toString(timeline), '/', toString(term), '/', toString(revision)) AS id,
       timeline AS timelineNo, toString(term) AS termText, toString(revision) AS revisionText, leader, proof
FROM {db:Identifier}.checkpoint_proofs FINAL
WHERE cluster = {cluster:String} AND proof != ''
