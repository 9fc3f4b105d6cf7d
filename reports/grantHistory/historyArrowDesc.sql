-- historyArrow.sql for a page newest first (order=desc): the same rows in
-- historyDesc.sql's order.
-- Parameters: (none)
SELECT
-- @include reports/grantHistory/arrowColumns.sql
-- @include reports/grantHistory/arrowPage.sql
ORDER BY granted_at DESC, cluster DESC, key DESC, grant_revision DESC, spool_id DESC, timeline DESC
