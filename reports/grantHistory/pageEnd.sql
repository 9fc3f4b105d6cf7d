-- Where an Arrow page of grant history ends: the sort key of the page's last
-- row (offset limit-1) and of the row after it, if any. The same grant filter
-- (grants/filter*.sql) and order as history.sql; only the sort
-- key is read, so finding the end costs far less than serving the page.
-- Parameters: {offset:UInt32}
SELECT
-- @include reports/grantHistory/pagePosition.sql
ORDER BY granted_at, cluster, key, grant_revision, spool_id, timeline
LIMIT 2 OFFSET {offset:UInt32}
