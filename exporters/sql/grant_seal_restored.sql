-- When the last restore of a cluster was recorded (0: never): a grant seal
-- signed before it no longer counts (exporters/checks/grantSeals.ts), since the
-- restore's marks change the rows it may cover. Any restore gap counts,
-- proven or not: a forged one only makes exports check in full.
-- Parameters: {db:Identifier} {cluster:String}
SELECT toString(ifNull(max(toUnixTimestamp64Milli(detected_at)), 0)) AS lastMs
FROM {db:Identifier}.gaps
WHERE cluster = {cluster:String} AND kind = 'restore'
