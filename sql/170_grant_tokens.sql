-- 170: which keys a fencing token was granted on (issue 22, token lookup).
-- A token lookup names no key, so it read `grants` (sorted by cluster, key,
-- revision) through its bloom-filter skip index: every granule's filter is
-- read, and false positives grow with the table (100 M events: p95 113 ms;
-- 300 M: 505 ms). grant_tokens is sorted by token: one token is one range of a
-- granule, which names the key(s) it was granted on; with exactly one key the
-- lookup reads that key's range of grants_by_key (sql/140), like a key history
-- (reports/grantHistory/index.ts: tokenKey).
-- Why a narrow table and not a third copy of every grant column: it only
-- routes the lookup, the page still comes from grants_by_key FINAL with the
-- same filters, so it needs nothing that changes when a grant closes, and
-- each row the tailer writes into `grants` costs one small row here.
-- A row is (token, cluster, key), never updated; the open and closed rows of a
-- grant (and a replay's) write the same row, which the engine collapses. Token
-- 0 (unprotected grants, foreign holds without a token) is left out: it names
-- thousands of keys, and a lookup of it reads `grants` as before. The table
-- only ever names too many keys, never too few (nothing is deleted from it;
-- a row whose grant is gone from `grants` just routes to a page without it),
-- and a lookup that finds no key or more than one reads `grants` as before.
-- Fed by a materialized view on every insert into `grants`, and filled once
-- from what `grants` already holds (the view exists first, so a row inserted
-- meanwhile is written by one or both: the same row, collapsed).
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.grant_tokens
(
    token    UInt64,
    cluster  LowCardinality(String),
    key      String
)
ENGINE = ReplacingMergeTree
ORDER BY (token, cluster, key);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.grant_tokens_mv TO {db:Identifier}.grant_tokens AS
SELECT token, cluster, key
FROM {db:Identifier}.grants
WHERE token != 0;

INSERT INTO {db:Identifier}.grant_tokens
SELECT DISTINCT token, cluster, key
FROM {db:Identifier}.grants
WHERE token != 0;
