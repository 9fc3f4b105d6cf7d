-- Grant history newest first (order=desc, the default): history.sql's rows
-- in the opposite order, the cursor's "after" below it (pageSource.sql).
-- Parameters: {limit:UInt32}
SELECT
-- @include reports/grantHistory/columns.sql
-- @include reports/grantHistory/pageSource.sql
WHERE
-- @include grants/filterWhere.sql
ORDER BY granted_at DESC, cluster DESC, key DESC, grant_revision DESC, spool_id DESC, timeline DESC
LIMIT {limit:UInt32}
