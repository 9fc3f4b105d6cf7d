-- When a cluster's capture began, for the history backfill (parquetHistory.ts
-- captureBegan): the earliest time any of its captured rows carries, events'
-- wall times and grants' grant times, of every timeline and every origin. A
-- forged or skewed early time only makes it earlier — a day is then written
-- (empty) as before; a day holding rows is never found before it. Each column
-- is '' when the table holds nothing of the cluster (a time of 0, 1970, is a
-- time: an insider's queue value can carry it, and it must not read as none).
-- Parameters: {db:Identifier} {cluster:String}
SELECT
    ifNull((SELECT toString(toUnixTimestamp64Milli(minOrNull(wall_time))) FROM {db:Identifier}.events WHERE cluster = {cluster:String}), '') AS events_ms,
    ifNull((SELECT toString(toUnixTimestamp64Milli(minOrNull(granted_at))) FROM {db:Identifier}.grants WHERE cluster = {cluster:String}), '') AS grants_ms
