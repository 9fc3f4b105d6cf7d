-- pageEnd.sql for a page newest first (order=desc): the same sort key in the
-- opposite order (historyDesc.sql's).
-- Parameters: {offset:UInt32}
SELECT
-- @include reports/grantHistory/pagePosition.sql
ORDER BY granted_at DESC, cluster DESC, key DESC, grant_revision DESC, spool_id DESC, timeline DESC
LIMIT 2 OFFSET {offset:UInt32}
