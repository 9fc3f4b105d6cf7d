-- A grant's place in the pages (PagePosition in index.ts: what a cursor or a
-- page's end holds), as pageEnd.sql and pageEndDesc.sql read it, then where
-- they read it from.
-- Parameters: (none)
    toUnixTimestamp64Milli(granted_at) AS granted_at_ms,
    cluster,
    key,
    grant_revision,
    spool_id,
    timeline
-- @include reports/grantHistory/pageSource.sql
WHERE
-- @include grants/filterWhere.sql
