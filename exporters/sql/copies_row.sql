-- One grant row as copies_check.sql compares it across `grants` and a copy:
-- its identity, an id and a hash of every other column, each in two hash
-- families (an edit keeping both is a second preimage of each at once). A
-- NULL makes either NULL (and every comparison false): the nullable end
-- columns are hashed as text. The includer names the table (FROM …).
-- Parameters: (none)
        SELECT cluster, key, grant_revision, spool_id, timeline, (cityHash64(cluster, key, grant_revision, spool_id, timeline), farmFingerprint64(cluster, key, grant_revision, spool_id, timeline)) AS id,
               (cityHash64(namespace, lock_path, class, holder, session, token, epoch, granted_at, wait_ms, end_kind, end_revision,
                           ifNull(toString(ended_at), 'NULL'), ended_at_error_ms, ifNull(toString(duration_ms), 'NULL'), unprotected, start_known,
                           row_version, origin, rolled_back_by, superseded_by),
                farmFingerprint64(namespace, lock_path, class, holder, session, token, epoch, granted_at, wait_ms, end_kind, end_revision,
                           ifNull(toString(ended_at), 'NULL'), ended_at_error_ms, ifNull(toString(duration_ms), 'NULL'), unprotected, start_known,
                           row_version, origin, rolled_back_by, superseded_by)) AS h,
               toUInt8(1) AS found
