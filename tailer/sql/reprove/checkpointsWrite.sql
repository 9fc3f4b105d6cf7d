-- The rows of `ids` written again, each with its new proof (same columns and
-- version: the new row replaces the old at the next merge, and FINAL reads it).
-- Parameters: {db:Identifier} {cluster:String} {ids:Array(String)} {proofs:Array(String)}
INSERT INTO {db:Identifier}.checkpoint_proofs
SELECT * REPLACE (transform(concat(toString(timeline), '/', toString(term), '/', toString(revision)), {ids:Array(String)}, {proofs:Array(String)}, proof) AS proof)
FROM {db:Identifier}.checkpoint_proofs FINAL
WHERE cluster = {cluster:String} AND has({ids:Array(String)}, concat(toString(timeline), '/', toString(term), '/', toString(revision)))
