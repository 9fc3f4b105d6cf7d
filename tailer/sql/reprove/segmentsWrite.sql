-- The segments of `ids` written again, each with its new proof (same columns and version).
-- Parameters: {db:Identifier} {cluster:String} {ids:Array(String)} {proofs:Array(String)}
INSERT INTO {db:Identifier}.catchup_segments
SELECT * REPLACE (transform(concat(toString(timeline), '/', toString(from_revision), '/', toString(through), '/', toString(term)), {ids:Array(String)}, {proofs:Array(String)}, proof) AS proof)
FROM {db:Identifier}.catchup_segments FINAL
WHERE cluster = {cluster:String} AND has({ids:Array(String)}, concat(toString(timeline), '/', toString(from_revision), '/', toString(through), '/', toString(term)))
