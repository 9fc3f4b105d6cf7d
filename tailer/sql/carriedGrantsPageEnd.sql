-- The end of the next page of grants a restore carries into the new timeline
-- (restores.ts, carryGrants.sql then markCarriedGrants.sql): the highest grant
-- revision among the first {limit} grants above {from} held at the divergence
-- {after} and not carried yet; n = 0: none left.
-- Parameters: {db:Identifier} {cluster:String} {after:UInt64} {from:UInt64} {timeline:UInt32} {limit:UInt64}
SELECT toString(max(grant_revision)) AS revision, count() AS n
FROM
(
    SELECT grant_revision
    FROM {db:Identifier}.grants FINAL
    WHERE cluster = {cluster:String} AND unprotected = 0 AND superseded_by = 0 AND timeline != {timeline:UInt32}
      AND grant_revision <= {after:UInt64} AND (end_kind = '' OR row_version > {after:UInt64}) AND grant_revision > {from:UInt64}
    ORDER BY grant_revision
    LIMIT {limit:UInt64}
)
