-- 100: a skip index on events.wall_time (issue 25). The digest worker
-- (exporters/digests/) finds the tailer's /sys/clock writes by wall time to
-- tell which periods are sealed and where each one ends; `events` is sorted
-- by revision, with which wall time rises, so a minmax index per granule
-- skips nearly everything outside the asked range. Parts written before this
-- migration carry no index and are read whole (correct, only slower); it is
-- not materialized here (a mutation over the whole table).
-- Parameters: {db:Identifier}. Idempotent (IF NOT EXISTS).

ALTER TABLE {db:Identifier}.events ADD INDEX IF NOT EXISTS events_wall_time_minmax wall_time TYPE minmax GRANULARITY 1;
