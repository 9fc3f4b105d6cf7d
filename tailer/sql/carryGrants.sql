-- Grants held at the divergence in the timeline a restore leaves (granted at
-- or below it, not ended there: still open, or ended above it — an end the
-- restore rolled back) are held in the restored cluster too: each is carried
-- into the new timeline as an open row of it ({timeline}), which the new
-- timeline's end of the grant replaces. The old rows stay (markCarriedGrants).
-- Idempotent: a carried row has the new timeline; its source is marked after.
-- One page of grant revisions ({from}, {upTo}] per statement (restores.ts).
-- The carried row is the carrying leader's ({term}, sql/110).
-- Parameters: {db:Identifier} {cluster:String} {after:UInt64} {from:UInt64} {upTo:UInt64} {timeline:UInt32} {term:UInt64}
INSERT INTO {db:Identifier}.grants
SELECT * REPLACE ({timeline:UInt32} AS timeline, '' AS end_kind, toUInt64(0) AS end_revision, CAST(NULL AS Nullable(DateTime64(3, 'UTC'))) AS ended_at,
                  toUInt32(0) AS ended_at_error_ms, CAST(NULL AS Nullable(Int64)) AS duration_ms, toUInt64(0) AS row_version, {term:UInt64} AS term)
FROM (
    -- A subquery: in the outer WHERE the REPLACE aliases would shadow the columns.
    SELECT *
    FROM {db:Identifier}.grants FINAL
    WHERE cluster = {cluster:String} AND unprotected = 0 AND superseded_by = 0 AND timeline != {timeline:UInt32}
      AND grant_revision <= {after:UInt64} AND (end_kind = '' OR row_version > {after:UInt64})
      AND grant_revision > {from:UInt64} AND grant_revision <= {upTo:UInt64}
)
