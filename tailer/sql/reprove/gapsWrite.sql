-- The restore gaps of `ids` written again, each with its new proof (same columns and version).
-- Parameters: {db:Identifier} {cluster:String} {ids:Array(String)} {proofs:Array(String)}
INSERT INTO {db:Identifier}.gaps
SELECT * REPLACE (transform(concat(toString(from_revision), '/', identity), {ids:Array(String)}, {proofs:Array(String)}, proof) AS proof)
FROM {db:Identifier}.gaps FINAL
WHERE cluster = {cluster:String} AND kind = 'restore' AND has({ids:Array(String)}, concat(toString(from_revision), '/', identity))
