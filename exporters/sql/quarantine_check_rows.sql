-- One page of one cluster's quarantine entries in the checked stretch (the
-- revisions of the range's changes, and spool lines, revision 0, quarantined
-- in the range), after a keyset cursor (revision, key, timeline), with what
-- their proof binds (the value kept by its sha256 and, for a prefix of a larger
-- one, the whole value's size and sha256: core/valueBound.ts
-- quarantineValueDigest), the size a whole one says, and whether a captured change
-- backs the entry (quarantine_check_missing.sql compares the two).
-- (Aliases differ from column names: an alias of the same name would win inside the query.)
-- Parameters: {db:Identifier} {cluster:String} {lo:UInt64} {hi:UInt64} {fromMs:Int64} {toMs:Int64} {afterRevision:UInt64} {afterKey:String} {afterTimeline:UInt32} {limit:UInt32}
SELECT toString(revision) AS revisionText, key AS keyText, timeline AS timelineNo, toString(op) AS opText, if(value_sha256 = '', lower(hex(SHA256(value))), concat(lower(hex(SHA256(value))), '/', toString(value_bytes), '/', value_sha256)) AS valueSha256, reason, proof,
       value_bytes AS wholeBytes, length(value) AS keptBytes,
       (revision, key, timeline) IN (
           SELECT revision, key, timeline FROM {db:Identifier}.events
           WHERE cluster = {cluster:String} AND revision >= {lo:UInt64} AND revision <= {hi:UInt64} AND event_type = 'other'
       ) AS backed
FROM {db:Identifier}.quarantine FINAL
WHERE cluster = {cluster:String}
    AND ((revision >= {lo:UInt64} AND revision <= {hi:UInt64})
         OR (revision = 0 AND at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')))
    AND (revision, key, timeline) > ({afterRevision:UInt64}, {afterKey:String}, {afterTimeline:UInt32})
ORDER BY revision, key, timeline
LIMIT {limit:UInt32}
