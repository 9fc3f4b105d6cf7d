-- Captured changes the tailer could not decode (event_type 'other', whose
-- raw row the digests hash) without their quarantine entry, or whose entry
-- says another op or value: the quarantine view would hide, or misstate, a
-- value nobody decoded (a forged hold, say). The tailers' own election keys
-- are kept as 'other' without an entry, by design. One row per problem, at
-- most {limit}. A delete's entry holds the value it removed. Both keep the
-- same prefix of a value above 64 KiB, with its sha256 (sql/290). (Aliases differ
-- from column names: an alias of the same name would win inside the query.)
-- Parameters: {db:Identifier} {cluster:String} {lo:UInt64} {hi:UInt64} {electionPrefix:String} {limit:UInt32}
SELECT toString(e.revision) AS revisionText, e.key AS keyText, toString(e.op) AS opText, e.timeline AS timelineNo,
       if(q.present = 0, 'no quarantine entry for a change the tailer could not decode',
          if(q.op != e.op, concat('the quarantine entry says op ', q.op), 'the quarantine entry holds another value than the captured change')) AS problem
FROM
(
    SELECT revision, key, op, timeline, if(op = 'put', value, prev_value) AS raw,
           if(op = 'put', value_sha256, prev_value_sha256) AS raw_sha256
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String} AND revision >= {lo:UInt64} AND revision <= {hi:UInt64}
        AND event_type = 'other' AND op IN ('put', 'delete') AND NOT startsWith(key, {electionPrefix:String})
) AS e
LEFT JOIN
(
    SELECT revision, key, timeline, toString(op) AS op, value, value_sha256 AS whole_sha256, 1 AS present
    FROM {db:Identifier}.quarantine FINAL
    WHERE cluster = {cluster:String} AND revision >= {lo:UInt64} AND revision <= {hi:UInt64}
) AS q ON e.revision = q.revision AND e.key = q.key AND e.timeline = q.timeline
WHERE q.present = 0 OR q.op != e.op OR q.value != e.raw OR q.whole_sha256 != e.raw_sha256
ORDER BY e.revision, e.key
LIMIT {limit:UInt32}
SETTINGS join_use_nulls = 0
