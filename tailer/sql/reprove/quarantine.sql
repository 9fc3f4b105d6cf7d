-- One page of one cluster's quarantine entries that carry a proof (sql/240),
-- after a keyset cursor, with what the proof binds (the value by its sha256)
-- and the id quarantineWrite.sql picks each by.
-- Parameters: {db:Identifier} {cluster:String} {afterId:String} {limit:UInt32}
SELECT concat(toString(revision), '/', toString(timeline), '/', key) AS id, toString(revision) AS revisionText, key AS keyText,
       timeline AS timelineNo, toString(op) AS opText, if(value_sha256 = '', lower(hex(SHA256(value))), concat(lower(hex(SHA256(value))), '/', toString(value_bytes), '/', value_sha256)) AS valueSha256, reason, proof
FROM {db:Identifier}.quarantine FINAL
WHERE cluster = {cluster:String} AND proof != '' AND concat(toString(revision), '/', toString(timeline), '/', key) > {afterId:String}
ORDER BY id
LIMIT {limit:UInt32}
