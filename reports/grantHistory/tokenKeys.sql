-- The keys a fencing token was granted on (grant_tokens, sql/170: sorted by
-- token, so this reads one granule), within the lookup's cluster filter. At
-- most two rows: the caller only asks whether there is exactly one
-- (reports/grantHistory/index.ts: tokenKey). Within a scoped reader's scope
-- too: a token granted outside it routes like one granted nowhere, so the
-- page's time says nothing of other namespaces (the page applies the scope
-- anyway).
-- Parameters: {db:Identifier} {token:UInt64} {cluster:String} {scopeClusters:Array(String)}
SELECT DISTINCT key
FROM {db:Identifier}.grant_tokens
WHERE token = {token:UInt64}
    AND ({cluster:String} = '' OR cluster = {cluster:String})
    AND (empty({scopeClusters:Array(String)}) OR has({scopeClusters:Array(String)}, cluster))
    AND
-- @include grants/keyNamespaceBound.sql
LIMIT 2
