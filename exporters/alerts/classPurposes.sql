-- The purpose of every lock class of a cluster as last defined (for rules on
-- purpose, e.g. every expiry of a correctness class).
-- Parameters: {db:Identifier} {cluster:String} {classPrefix:String}
SELECT name, JSONExtractString(value, 'purpose') AS purpose
FROM
(
    SELECT substring(key, length({classPrefix:String}) + 1) AS name, op, value
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String} AND startsWith(key, {classPrefix:String}) AND op IN ('put', 'delete')
    ORDER BY key, revision DESC
    LIMIT 1 BY key
)
WHERE op = 'put'
