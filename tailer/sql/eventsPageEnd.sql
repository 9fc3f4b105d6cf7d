-- The end of the next page of a restore's event marks (restores.ts,
-- markEvents.sql): the highest revision among the first {limit} events of the
-- current timeline above {from}; n = 0: nothing left to mark. A page is
-- {limit} rows and the rest of its last revision (one revision may carry a
-- mass expiry): each mark statement, and what it reads, stays bounded.
-- Only rows captured before the marking timeline {generation} (markEvents.sql).
-- Parameters: {db:Identifier} {cluster:String} {from:UInt64} {limit:UInt64} {generation:UInt32}
SELECT toString(max(revision)) AS revision, count() AS n
FROM
(
    SELECT revision
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String} AND revision > {from:UInt64} AND superseded_by = 0 AND timeline < {generation:UInt32}
    ORDER BY revision
    LIMIT {limit:UInt64}
)
