-- The copies of `grants` that reports read, checked against it (issue 40
-- item 3): key history reads grants_by_key (sql/140), a holder's history
-- grants_by_holder (sql/056), and a token lookup is routed by grant_tokens
-- (sql/170). Each is written by a materialized view from what the tailer
-- inserts into `grants`, so a store writer can edit one and leave `grants`
-- (and the events, which the digests hash) alone: the grants check
-- (grants_check.sql) would pass while every key history showed the edit.
-- For the grants of one cluster timed in [from, to), one row per problem:
--   grants_by_key: the same rows as `grants` (identity: cluster, lock, grant
--     revision, spool id, timeline), equal in every column a report shows;
--   grants_by_holder: likewise (the holder's history);
--   grant_tokens: each token of a grant in `grants` routed to that grant's
--     lock (a token whose row is gone or moved to another lock is looked up
--     in the wrong place; a row naming a second lock only makes the lookup
--     read `grants`, which is harmless, so extra rows are not judged).
--   every table: no grant has rows that differ in a column reports filter on
--     before FINAL (holder, class, namespace, token), whose older row a
--     filtered report would show.
-- `copy` names the table, `problem` what is wrong. At most {limit} rows.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {limit:UInt32}
SELECT copy, cluster, key, grantRevision, spoolId, timeline, problem
FROM
(
    SELECT 'grants_by_key' AS copy,
           if(a.found = 1, a.cluster, b.cluster) AS cluster, if(a.found = 1, a.key, b.key) AS key,
           toString(if(a.found = 1, a.grant_revision, b.grant_revision)) AS grantRevision, if(a.found = 1, a.spool_id, b.spool_id) AS spoolId,
           if(a.found = 1, a.timeline, b.timeline) AS timeline,
           multiIf(b.found = 0, 'missing from grants_by_key (key history does not show it)',
                   a.found = 0, 'in grants_by_key only (key history shows a grant that `grants` does not hold)',
                   a.h != b.h, 'differs in grants_by_key from `grants` (key history shows another row)', '') AS problem
    FROM
    (
-- @include exporters/sql/copies_row.sql
        FROM {db:Identifier}.grants FINAL
        PREWHERE cluster = {cluster:String}
            AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    ) AS a
    FULL OUTER JOIN
    (
-- @include exporters/sql/copies_row.sql
        FROM {db:Identifier}.grants_by_key FINAL
        PREWHERE cluster = {cluster:String}
            AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    ) AS b ON a.id = b.id
    WHERE problem != ''

    UNION ALL

    SELECT 'grants_by_holder' AS copy,
           if(a.found = 1, a.cluster, b.cluster) AS cluster, if(a.found = 1, a.key, b.key) AS key,
           toString(if(a.found = 1, a.grant_revision, b.grant_revision)) AS grantRevision, if(a.found = 1, a.spool_id, b.spool_id) AS spoolId,
           if(a.found = 1, a.timeline, b.timeline) AS timeline,
           multiIf(b.found = 0, 'missing from grants_by_holder (its holder''s history does not show it)',
                   a.found = 0, 'in grants_by_holder only (a holder''s history shows a grant that `grants` does not hold)',
                   a.h != b.h, 'differs in grants_by_holder from `grants` (a holder''s history shows another row)', '') AS problem
    FROM
    (
-- @include exporters/sql/copies_row.sql
        FROM {db:Identifier}.grants FINAL
        PREWHERE cluster = {cluster:String}
            AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    ) AS a
    FULL OUTER JOIN
    (
-- @include exporters/sql/copies_row.sql
        FROM {db:Identifier}.grants_by_holder FINAL
        PREWHERE cluster = {cluster:String}
            AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    ) AS b ON a.id = b.id
    WHERE problem != ''

    UNION ALL

    -- Rows of one grant that differ in a column reports filter on before FINAL merges them (grants/filter*.sql
    -- prewhere.sql): a filtered report would show an older row the merged one hides (a forged row of a lower version).
    SELECT 'grants' AS copy, cluster, key, toString(grant_revision) AS grantRevision, spool_id AS spoolId, timeline,
           concat('holds ', toString(uniqExact(holder, class, namespace, token)), ' versions of this grant that differ in holder, class, namespace or token ',
                  '(a report filtered on one shows a row the merged history hides)') AS problem
    FROM {db:Identifier}.grants
    PREWHERE cluster = {cluster:String}
        AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    GROUP BY cluster, key, grant_revision, spool_id, timeline
    HAVING uniqExact(holder, class, namespace, token) > 1

    UNION ALL

    -- Rows of one grant that differ in a column reports filter on before FINAL merges them (grants/filter*.sql
    -- prewhere.sql): a filtered report would show an older row the merged one hides (a forged row of a lower version).
    SELECT 'grants_by_key' AS copy, cluster, key, toString(grant_revision) AS grantRevision, spool_id AS spoolId, timeline,
           concat('holds ', toString(uniqExact(holder, class, namespace, token)), ' versions of this grant that differ in holder, class, namespace or token ',
                  '(a report filtered on one shows a row the merged history hides)') AS problem
    FROM {db:Identifier}.grants_by_key
    PREWHERE cluster = {cluster:String}
        AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    GROUP BY cluster, key, grant_revision, spool_id, timeline
    HAVING uniqExact(holder, class, namespace, token) > 1

    UNION ALL

    -- Rows of one grant that differ in a column reports filter on before FINAL merges them (grants/filter*.sql
    -- prewhere.sql): a filtered report would show an older row the merged one hides (a forged row of a lower version).
    SELECT 'grants_by_holder' AS copy, cluster, key, toString(grant_revision) AS grantRevision, spool_id AS spoolId, timeline,
           concat('holds ', toString(uniqExact(holder, class, namespace, token)), ' versions of this grant that differ in holder, class, namespace or token ',
                  '(a report filtered on one shows a row the merged history hides)') AS problem
    FROM {db:Identifier}.grants_by_holder
    PREWHERE cluster = {cluster:String}
        AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    GROUP BY cluster, key, grant_revision, spool_id, timeline
    HAVING uniqExact(holder, class, namespace, token) > 1

    UNION ALL

    SELECT 'grant_tokens' AS copy, a.cluster AS cluster, a.key AS key, toString(a.grant_revision) AS grantRevision, a.spool_id AS spoolId,
           a.timeline AS timeline, 'its token is not routed to its lock in grant_tokens (a token lookup does not find it)' AS problem
    FROM
    (
        SELECT cluster, key, grant_revision, spool_id, min(timeline) AS timeline, token
        FROM {db:Identifier}.grants FINAL
        PREWHERE cluster = {cluster:String}
            AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        WHERE token != 0
        GROUP BY cluster, key, grant_revision, spool_id, token
    ) AS a
    LEFT JOIN
    (
        SELECT DISTINCT token, cluster, key, toUInt8(1) AS found
        FROM {db:Identifier}.grant_tokens
        WHERE cluster = {cluster:String}
            AND token IN (
                SELECT token FROM {db:Identifier}.grants
                PREWHERE cluster = {cluster:String}
                    AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
                WHERE token != 0)
    ) AS t ON t.token = a.token AND t.cluster = a.cluster AND t.key = a.key
    WHERE t.found = 0
)
ORDER BY copy, cluster, key, toUInt64(grantRevision), spoolId, timeline
LIMIT {limit:UInt32}
-- Joins must leave a missing side's `found` 0, not NULL (a NULL problem would pass as none).
SETTINGS join_use_nulls = 0
