-- Grant history: one row per grant (grants FINAL: exact under replays), every
-- grant whose hold overlaps [from, to], after the cursor, in the order
-- (granted_at, cluster, key, grant_revision, spool_id, timeline). The filters and the
-- window rule (overlapping) are the grant filter's (grants/filter*.sql:
-- PREWHERE for columns a grant never changes, WHERE for ended_at and end_kind);
-- source, filter and cursor: pageSource.sql. Columns: columns.sql (the
-- timeline's too).
-- Parameters: {limit:UInt32}
SELECT
-- @include reports/grantHistory/columns.sql
-- @include reports/grantHistory/pageSource.sql
WHERE
-- @include grants/filterWhere.sql
ORDER BY granted_at, cluster, key, grant_revision, spool_id, timeline
LIMIT {limit:UInt32}
