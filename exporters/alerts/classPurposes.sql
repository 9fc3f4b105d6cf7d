-- The purpose of every lock class of a cluster as last defined (for rules on
-- purpose, e.g. every expiry of a correctness class).
-- Parameters: {db:Identifier} {cluster:String}
SELECT name, JSONExtractString(value, 'purpose') AS purpose
FROM
(
    SELECT substring(key, 12) AS name, op, value
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String} AND startsWith(key, '/sys/class/') AND op IN ('put', 'delete')
    ORDER BY key, revision DESC
    LIMIT 1 BY key
)
WHERE op = 'put'
