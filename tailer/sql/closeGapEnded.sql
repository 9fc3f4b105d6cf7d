-- Grants captured open before a gap and not held in the snapshot after it
-- ended inside the gap, how is unknown: a closed row (end_kind 'unknown',
-- row_version = the gap's last revision, so it wins over the open row) with
-- the end time bounded by the gap: ended_at mid-gap, ± half its length.
-- Parameters: {db:Identifier} {cluster:String} {checkpoint:UInt64} {gapTo:UInt64} {snapshotRevision:UInt64} {endedMs:Int64} {errorMs:UInt32}
INSERT INTO {db:Identifier}.grants
    (cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
     end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version)
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       'unknown', {gapTo:UInt64}, fromUnixTimestamp64Milli({endedMs:Int64}), {errorMs:UInt32},
       {endedMs:Int64} - toUnixTimestamp64Milli(granted_at), unprotected, start_known, {gapTo:UInt64}
FROM {db:Identifier}.grants FINAL
WHERE cluster = {cluster:String} AND unprotected = 0 AND end_kind = '' AND grant_revision <= {checkpoint:UInt64}
  AND (concat('/l/', key), grant_revision) NOT IN (
      SELECT key, grant_revision FROM {db:Identifier}.events
      WHERE cluster = {cluster:String} AND revision = {snapshotRevision:UInt64} AND event_type = 'snapshot-hold')
