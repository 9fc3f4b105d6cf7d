-- After carryGrants: the old rows of the carried grants are superseded from
-- generation {generation} (the new timeline's row tells the grant from now
-- on), not rolled back: the grant itself is part of both timelines. An end
-- the restore rolled back stays in `events`, marked there. Idempotent.
-- One page of grant revisions ({from}, {upTo}] per statement (restores.ts).
-- The mark keeps at least the row's term (sql/110) so it wins under FINAL.
-- Parameters: {db:Identifier} {cluster:String} {after:UInt64} {from:UInt64} {upTo:UInt64} {timeline:UInt32} {generation:UInt32} {term:UInt64}
INSERT INTO {db:Identifier}.grants
SELECT * REPLACE ({generation:UInt32} AS superseded_by, greatest(term, {term:UInt64}) AS term)
FROM (
    -- A subquery: in the outer WHERE the REPLACE aliases would shadow the columns.
    SELECT *
    FROM {db:Identifier}.grants FINAL
    WHERE cluster = {cluster:String} AND unprotected = 0 AND superseded_by = 0 AND timeline != {timeline:UInt32}
      AND grant_revision <= {after:UInt64} AND (end_kind = '' OR row_version > {after:UInt64})
      AND grant_revision > {from:UInt64} AND grant_revision <= {upTo:UInt64}
)
