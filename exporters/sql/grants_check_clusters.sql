-- The clusters an export of every cluster covers in [from, to): those with a
-- grant or a start event there (grantsCheck.ts checks each against its own
-- grant seals; a cluster whose rows were all deleted still has its events).
-- Parameters: {db:Identifier} {fromMs:Int64} {toMs:Int64}
SELECT DISTINCT cluster
FROM
(
    SELECT DISTINCT cluster FROM {db:Identifier}.grants
    PREWHERE granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    UNION ALL
    SELECT DISTINCT cluster FROM {db:Identifier}.events
    PREWHERE wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        AND event_type IN ('grant', 'snapshot-hold', 'unprotected-grant')
)
ORDER BY cluster
