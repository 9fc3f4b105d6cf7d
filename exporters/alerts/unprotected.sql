-- An alert sink's next batch of unprotected grants (shipped from fail-open
-- spools: revision 0, so they have their own position) in ingest order,
-- strictly after the sink's position.
-- Parameters: {db:Identifier} {cluster:String} {afterMs:Int64} {afterKey:String} {limit:UInt32}
SELECT key, toString(namespace) AS namespace, lock_path, toString(class) AS class, holder, session, toUnixTimestamp64Milli(wall_time) AS wall_ms,
       toUnixTimestamp64Milli(ingested_at) AS ingested_ms, value
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String}
    AND op = 'spool' AND event_type = 'unprotected-grant'
    AND (toUnixTimestamp64Milli(ingested_at), key) > ({afterMs:Int64}, {afterKey:String})
ORDER BY ingested_ms, key
LIMIT {limit:UInt32}
