-- One chunk of a raw-events export of one cluster over [from, to) of wall
-- time, revisions in (lo, hi] (hasLo / hasHi 0: open-ended). Every column of
-- `events` but the ingest time — origin and the timeline marks included: after
-- a restore without a revision bump two timelines' rows share a (revision, key),
-- and only `timeline` tells them apart (sql/065). The caller appends FORMAT.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {hasLo:UInt8} {lo:UInt64} {hasHi:UInt8} {hi:UInt64}
SELECT
    cluster, revision, key, event_type, op, namespace, lock_path, class, holder, session, token, epoch,
    grant_revision, wait_ms, wall_time, time_estimated, time_error_ms, create_revision, mod_revision,
    version, lease, value, prev_value, unprotected, origin,
    value_bytes, value_sha256,              -- the whole value's size, and its sha256 when `value` keeps only its first 64 KiB (sql/290)
    prev_value_bytes, prev_value_sha256,
    timeline,                               -- the etcd timeline (generation) that captured the row
    rolled_back_by,                         -- the timeline whose restore rolled this change back; 0: never
    superseded_by                           -- from which timeline on the row is no longer the current account; 0: it is
FROM {db:Identifier}.events FINAL
PREWHERE cluster = {cluster:String}
    AND wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
    AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    AND ({hasLo:UInt8} = 0 OR revision > {lo:UInt64})
    AND ({hasHi:UInt8} = 0 OR revision <= {hi:UInt64})
ORDER BY cluster, revision, key, timeline
