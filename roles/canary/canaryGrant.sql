-- The newest canary grant of a cluster the store holds, by the grant filter
-- (grants/filter*.sql, the canary's rows kept): the lock API's own (origin
-- api: its proof checked by the tailer), by the canary, released, under the
-- canary's key prefix, granted in [from, to), at a grant revision at most
-- {throughRevision} (how far an alert sink has delivered). ms 0 with n 0: none.
-- Parameters: {db:Identifier} {throughRevision:UInt64}
SELECT toString(toUnixTimestamp64Milli(max(granted_at))) AS ms, toString(count()) AS n
FROM {db:Identifier}.grants FINAL
PREWHERE
-- @include grants/filterPrewhere.sql
WHERE
-- @include grants/filterWhere.sql
    AND grant_revision <= {throughRevision:UInt64}
