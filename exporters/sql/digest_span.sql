-- The lowest and highest revision (above 0) a digest period's rows can have
-- within the primary-key bounds {lo, hi}, and at or below the cluster's
-- highest checkpoint (nothing above it was captured: one row written far
-- above it must not make the windows walk to 2^63): where the windows of
-- digest_events.sql start and stop. Key columns only: no FINAL needed.
-- Parameters: {db:Identifier} {cluster:String} {lo:UInt64} {hi:UInt64}
WITH (SELECT max(revision) FROM {db:Identifier}.checkpoints_highest WHERE cluster = {cluster:String}) AS cp
SELECT toString(count()) AS n, toString(min(revision)) AS low, toString(max(revision)) AS high
FROM {db:Identifier}.events
WHERE cluster = {cluster:String} AND revision >= {lo:UInt64} AND revision <= {hi:UInt64} AND revision > 0 AND revision <= cp
