-- Grant history as typed columns for Arrow IPC (format=arrow): the rows of
-- history.sql (the same grant filter, grants/filter*.sql, and order)
-- between the cursor and the page's end, found first by pageEnd.sql. The page
-- is bounded by that end, not by LIMIT, so pages meet exactly: a row that
-- arrives between the two queries is served by this page or the next, never
-- skipped. Names and meanings are the JSON items'; tokens and revisions stay
-- UInt64 (Arrow uint64), times are Arrow timestamp[ms, UTC]; LowCardinality
-- columns come as plain strings (ClickHouse's default for Arrow output).
-- Parameters: (none)
SELECT
-- @include reports/grantHistory/arrowColumns.sql
-- @include reports/grantHistory/arrowPage.sql
ORDER BY granted_at, cluster, key, grant_revision, spool_id, timeline
