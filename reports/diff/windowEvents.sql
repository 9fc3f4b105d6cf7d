-- Force records and epoch advances committed in (from, to], oldest first.
-- Parameters: {db:Identifier} {cluster:String} {fromRevision:UInt64} {toRevision:UInt64} {limit:UInt32}
SELECT revision, key, event_type, epoch, value
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String}
    AND revision > {fromRevision:UInt64} AND revision <= {toRevision:UInt64}
    AND op = 'put'
    AND event_type IN ('force-record', 'epoch-advance')
ORDER BY revision, key
LIMIT {limit:UInt32}
