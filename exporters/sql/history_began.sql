-- When a cluster's capture began, for the history backfill (parquetHistory.ts
-- captureBegan): the earliest time any of its captured rows carries, events'
-- wall times and grants' grant times, of every timeline and every origin. A
-- forged or skewed early time only makes it earlier — a day is then written
-- (empty) as before; a day holding rows is never found before it. Each column
-- is 0 when the table holds nothing of the cluster.
-- Parameters: {db:Identifier} {cluster:String}
SELECT
    toString(ifNull((SELECT toUnixTimestamp64Milli(minOrNull(wall_time)) FROM {db:Identifier}.events WHERE cluster = {cluster:String}), 0)) AS events_ms,
    toString(ifNull((SELECT toUnixTimestamp64Milli(minOrNull(granted_at)) FROM {db:Identifier}.grants WHERE cluster = {cluster:String}), 0)) AS grants_ms
