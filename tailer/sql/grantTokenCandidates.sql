-- The captured API grants that could explain a shared high-water token (tailer/sink/grantHighWater.ts): the grant
-- puts of one cluster whose token is {token} (exact: {exact} = 1), or the highest below it ({exact} = 0), on
-- every timeline, rolled back ones included; the caller checks each hold value's proof. The exact form reads
-- one revision of the sort key; the other scans the cluster's grants (asked only when the high-water row is
-- explained by no proven grant, i.e. someone wrote the store).
-- Parameters: {db:Identifier} {cluster:String} {token:UInt64} {revision:UInt64} {exact:UInt8} {limit:UInt32}
SELECT key, value, toString(revision) AS revision, toString(token) AS token
FROM
(
    SELECT key, value, revision, token
    FROM {db:Identifier}.events
    WHERE cluster = {cluster:String}
        AND (NOT {exact:UInt8} OR revision = {revision:UInt64})
        AND event_type = 'grant' AND op = 'put' AND origin = 'api' AND unprotected = 0
        AND if({exact:UInt8}, token = {token:UInt64}, token < {token:UInt64})
    UNION ALL
    SELECT key, value, revision, token
    FROM {db:Identifier}.rolled_back_events
    WHERE cluster = {cluster:String}
        AND (NOT {exact:UInt8} OR revision = {revision:UInt64})
        AND event_type = 'grant'
        AND if({exact:UInt8}, token = {token:UInt64}, token < {token:UInt64})
)
ORDER BY token DESC
LIMIT {limit:UInt32}
