-- The grant seals of one cluster whose periods overlap [from, to), every one
-- stored (exporters/checks/grantSeals.ts takes, per period, the newest whose
-- signature and content hold). Bounded: an export reads at most {limit}.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {limit:UInt32}
SELECT body, signature
FROM {db:Identifier}.grant_seals
WHERE cluster = {cluster:String}
    AND period_end > fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND period_start < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
ORDER BY period_start, sealed_at DESC
LIMIT {limit:UInt32}
