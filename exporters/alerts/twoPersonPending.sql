-- An alert sink's next batch of one cluster's two-person log (sql/200): the
-- rows it has not delivered, oldest first. row_id is the hash of the whole
-- row, the same every time it is read (sql/210 keeps the delivered ones).
-- Parameters: {db:Identifier} {sink:String} {cluster:String} {limit:UInt32}
SELECT row_id, at_ms, kind, action, request_id, request_hash, actor, requester, key, reason, revision, detail
FROM
(
    SELECT lower(hex(sipHash128(at, cluster, kind, action, request_id, request_hash, actor, requester, key, reason, revision, detail))) AS row_id,
           toUnixTimestamp64Milli(at) AS at_ms, toString(kind) AS kind, toString(action) AS action, request_id, request_hash, actor, requester, key, reason,
           toString(revision) AS revision, detail
    FROM {db:Identifier}.two_person_log
    WHERE cluster = {cluster:String}
)
WHERE row_id NOT IN (SELECT row_id FROM {db:Identifier}.alert_two_person_deliveries WHERE sink = {sink:String} AND cluster = {cluster:String})
ORDER BY at_ms, row_id
LIMIT {limit:UInt32}
