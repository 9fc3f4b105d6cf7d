-- The periods before the digest worker's look-back that a fail-open spool
-- line reached late: spool lines (revision 0, which the spool shipper writes
-- whenever the lock API gets back to the store, however long after their
-- time) ingested since {sinceMs} — when the oldest digest of the look-back was
-- signed, so after the digests of every older period — and timed before
-- {beforeMs}, the look-back's first period. The worker re-counts those
-- periods like the look-back's (explain.ts: a late spool is re-signed with
-- its reason), so a line shipped days late is never a failure.
-- Parameters: {db:Identifier} {cluster:String} {sinceMs:Int64} {beforeMs:Int64} {periodMs:Int64}
SELECT DISTINCT toString(intDiv(toUnixTimestamp64Milli(wall_time), {periodMs:Int64}) * {periodMs:Int64}) AS periodStartMs
FROM {db:Identifier}.events
WHERE cluster = {cluster:String} AND revision = 0 AND op = 'spool'
    AND ingested_at >= fromUnixTimestamp64Milli({sinceMs:Int64}, 'UTC')
    AND wall_time < fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC')
