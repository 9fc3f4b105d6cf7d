-- Which of the canary's own grants (given by key and grant revision) the
-- store holds, by the grant filter (grants/filter*.sql, the canary's rows
-- kept): the lock API's (origin api: its proof checked by the tailer), held
-- by the canary, released, granted in [from, to); each with its grant time.
-- Parameters: {db:Identifier} {keys:Array(String)} {revisions:Array(UInt64)}
SELECT key, toString(grant_revision) AS revision, toString(toUnixTimestamp64Milli(granted_at)) AS ms
FROM {db:Identifier}.grants FINAL
PREWHERE
-- @include grants/filterPrewhere.sql
WHERE
-- @include grants/filterWhere.sql
    AND has({keys:Array(String)}, key)
    AND has({revisions:Array(UInt64)}, grant_revision)
