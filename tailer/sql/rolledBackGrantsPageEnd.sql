-- The end of the next page of a restore's rolled-back grant marks
-- (restores.ts, markRolledBackGrants.sql): the highest grant revision among
-- the first {limit} current grants granted above {from}; n = 0: none left.
-- Only rows of timelines before {generation} (markRolledBackGrants.sql).
-- Parameters: {db:Identifier} {cluster:String} {from:UInt64} {limit:UInt64} {generation:UInt32}
SELECT toString(max(grant_revision)) AS revision, count() AS n
FROM
(
    SELECT grant_revision
    FROM {db:Identifier}.grants FINAL
    WHERE cluster = {cluster:String} AND unprotected = 0 AND superseded_by = 0 AND grant_revision > {from:UInt64} AND timeline < {generation:UInt32}
    ORDER BY grant_revision
    LIMIT {limit:UInt64}
)
