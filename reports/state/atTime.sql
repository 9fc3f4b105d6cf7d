-- The revision in force at a wall-clock instant: the newest captured change
-- whose time is at or before it (0 when none is). Estimated times (expiries)
-- count with their estimate. Only the rows of etcd timeline {timeline}
-- (sql/065): its own and earlier ones' not superseded by then. Read without
-- FINAL (a max over the whole cluster), so a row is left out when any copy of
-- it carries a mark that takes it out of the timeline — few rows, those a
-- restore marked.
-- Parameters: {db:Identifier} {cluster:String} {atMs:Int64} {timeline:UInt32}
SELECT max(revision) AS revision
FROM
(
    -- A subquery: in the outer query `revision` is the max's alias.
    SELECT revision
    FROM {db:Identifier}.events
    WHERE cluster = {cluster:String}
        AND op IN ('put', 'delete')
        AND wall_time > '2000-01-01'
        AND wall_time <= fromUnixTimestamp64Milli({atMs:Int64}, 'UTC')
        AND timeline <= {timeline:UInt32}
        AND (revision, key, timeline) NOT IN (
            SELECT revision, key, timeline FROM {db:Identifier}.events
            WHERE cluster = {cluster:String} AND superseded_by > 0 AND superseded_by <= {timeline:UInt32})
)
