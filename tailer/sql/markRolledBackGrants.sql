-- Grants a restore rolled back (granted above the divergence): they stay, as
-- they were (real holds that protected real work), marked rolled back by and
-- superseded from generation {generation}: the same rows inserted again with
-- the mark (same row_version and at least the row's term, sql/110: the later
-- insert wins under FINAL). Idempotent.
-- One page of grant revisions ({after}, {upTo}] per statement (restores.ts).
-- Only rows of timelines before {generation}: a restore finished again never
-- marks a grant captured under it or later.
-- Parameters: {db:Identifier} {cluster:String} {after:UInt64} {upTo:UInt64} {generation:UInt32} {term:UInt64}
INSERT INTO {db:Identifier}.grants
SELECT * REPLACE ({generation:UInt32} AS rolled_back_by, {generation:UInt32} AS superseded_by, greatest(term, {term:UInt64}) AS term)
FROM (
    -- A subquery: in the outer WHERE the REPLACE aliases would shadow the columns.
    SELECT *
    FROM {db:Identifier}.grants FINAL
    WHERE cluster = {cluster:String} AND unprotected = 0 AND superseded_by = 0 AND grant_revision > {after:UInt64} AND grant_revision <= {upTo:UInt64}
      AND timeline < {generation:UInt32}
)
