-- The highest token of an API grant ever captured for one cluster, on any
-- etcd timeline (rolled back or not); '0' when none (sql/060).
-- Parameters: {db:Identifier} {cluster:String}
SELECT toString(max(token)) AS token
FROM {db:Identifier}.grant_high_water
WHERE cluster = {cluster:String}
