-- Force records and epoch advances committed in (from, to], oldest first;
-- origin 'foreign': written around the lock API (no proof).
-- Only the rows of etcd timeline {timeline} (sql/065).
-- Parameters: {db:Identifier} {cluster:String} {fromRevision:UInt64} {toRevision:UInt64} {timeline:UInt32} {limit:UInt32} {scopeNamespaces:Array(String)} {holdPrefix:String}
SELECT revision, key, event_type, epoch, value, toString(origin) AS origin
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String}
    AND revision > {fromRevision:UInt64} AND revision <= {toRevision:UInt64}
    AND op = 'put'
    AND event_type IN ('force-record', 'epoch-advance')
    -- A scoped reader's force-releases are of its namespaces only, filtered before the LIMIT (its `truncated` says
    -- nothing of other namespaces); an epoch advance is the cluster's.
    AND (event_type = 'epoch-advance' OR empty({scopeNamespaces:Array(String)})
         OR has({scopeNamespaces:Array(String)}, splitByChar('/', if(startsWith(JSONExtractString(value, 'key'), {holdPrefix:String}),
                substring(JSONExtractString(value, 'key'), length({holdPrefix:String}) + 1), JSONExtractString(value, 'key')))[1]))
    AND timeline <= {timeline:UInt32} AND (superseded_by = 0 OR superseded_by > {timeline:UInt32})  -- timeline {timeline}'s rows (sql/065)
ORDER BY revision, key
LIMIT {limit:UInt32}
