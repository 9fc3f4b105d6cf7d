-- The checkpoint's witnesses (tailer/recovery/startDecision.ts): the latest {limit} puts captured at or
-- below the checkpoint, and the latest captured write of the clock key (written by the leader
-- about once a second). Each is checked against etcd's history at its own revision.
-- Bounded below ({from}) and read in primary-key order, so the check stays a few rows on any history.
-- Only the current timeline's rows (superseded_by = 0, sql/065): an old timeline's rows at reused
-- revisions would read as a restore at every start.
-- Parameters: {db:Identifier} {cluster:String} {from:UInt64} {upTo:UInt64} {limit:UInt32} {clock:String}
SELECT key, toString(revision) AS revision, value, value_bytes, value_sha256
FROM
(
    SELECT key, revision, value, value_bytes, value_sha256
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String} AND revision > {from:UInt64} AND revision <= {upTo:UInt64} AND op = 'put' AND superseded_by = 0
    ORDER BY revision DESC
    LIMIT {limit:UInt32}
    UNION ALL
    SELECT key, revision, value, value_bytes, value_sha256
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String} AND revision > {from:UInt64} AND revision <= {upTo:UInt64} AND op = 'put' AND superseded_by = 0 AND key = {clock:String}
    ORDER BY revision DESC
    LIMIT 1
)
