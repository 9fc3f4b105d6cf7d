-- Marks the current timeline's captured events above a revision as no longer
-- part of it (superseded_by) and, for a restore, rolled back (rolled_back_by;
-- 0 for a new history): the same rows inserted again with the mark set, every
-- column kept, a later ingested_at and the higher of the row's and the marking
-- leader's term {term} (sql/110: the version leads with the term) so they win
-- under FINAL. Nothing is deleted or moved (sql/065). Idempotent: marked rows
-- are not selected again. One page of revisions ({after}, {upTo}] per
-- statement (restores.ts pages them). Only rows captured before the
-- timeline that marks them ({supersededBy}: its generation): a restore finished
-- again never marks what was captured under it or later.
-- Parameters: {db:Identifier} {cluster:String} {after:UInt64} {upTo:UInt64} {rolledBackBy:UInt32} {supersededBy:UInt32} {term:UInt64}
INSERT INTO {db:Identifier}.events
SELECT * REPLACE ({rolledBackBy:UInt32} AS rolled_back_by, {supersededBy:UInt32} AS superseded_by, now64(3) AS ingested_at, greatest(term, {term:UInt64}) AS term)
FROM (
    -- A subquery: in the outer WHERE the REPLACE aliases would shadow the columns.
    SELECT *
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String} AND revision > {after:UInt64} AND revision <= {upTo:UInt64} AND superseded_by = 0
      AND timeline < {supersededBy:UInt32}
)
