-- The quarantine entries of `ids` written again, each with its new proof (same columns and version).
-- Parameters: {db:Identifier} {cluster:String} {ids:Array(String)} {proofs:Array(String)}
INSERT INTO {db:Identifier}.quarantine
SELECT * REPLACE (transform(concat(toString(revision), '/', toString(timeline), '/', key), {ids:Array(String)}, {proofs:Array(String)}, proof) AS proof)
FROM {db:Identifier}.quarantine FINAL
WHERE cluster = {cluster:String} AND has({ids:Array(String)}, concat(toString(revision), '/', toString(timeline), '/', key))
