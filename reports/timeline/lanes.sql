-- Timeline lanes: the keys (one key, or every key under a prefix) with grants
-- whose hold overlaps [from, to], busiest first, with the number of such
-- grants per key; `lanes` and `total` count every matching key and grant
-- before the LIMIT, so the caller knows what was left out.
-- Which grants: the grant filter (grants/filter*.sql; key, keyPrefix and
-- cluster set, window rule overlapping).
-- Parameters: {db:Identifier} {maxLanes:UInt32}
SELECT key, grants, count() OVER () AS lanes, sum(grants) OVER () AS total
FROM
(
    SELECT key, count() AS grants
    FROM {db:Identifier}.grants FINAL
    PREWHERE
-- @include grants/filterPrewhere.sql
    WHERE
-- @include grants/filterWhere.sql
    GROUP BY key
)
ORDER BY grants DESC, key
LIMIT {maxLanes:UInt32}
