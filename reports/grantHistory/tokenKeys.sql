-- The keys a fencing token was granted on (grant_tokens, sql/170: sorted by
-- token, so this reads one granule), within the lookup's cluster filter. At
-- most two rows: the caller only asks whether there is exactly one
-- (reports/grantHistory/index.ts: tokenKey).
-- Parameters: {db:Identifier} {token:UInt64} {cluster:String}
SELECT DISTINCT key
FROM {db:Identifier}.grant_tokens
WHERE token = {token:UInt64}
    AND ({cluster:String} = '' OR cluster = {cluster:String})
LIMIT 2
