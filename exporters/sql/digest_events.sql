-- A digest period's events (digest_range.sql) within one window of revisions
-- [winLo, winHi] (the primary key: each window reads only its own granules),
-- in the digest's order (revision, key, timeline), every field the events
-- hash covers as a string (exporters/digests/format.ts EVENT_FIELDS: v2's,
-- a superset of v1's), and
-- ingested_at and notWhole (not hashed). The caller walks the windows in order: revision 0
-- (spooled grants) first, then upwards.
-- Parameters: {db:Identifier} {cluster:String} {winLo:UInt64} {winHi:UInt64}
SELECT cluster, toString(timeline) AS timeline, toString(revision) AS revision, key, toString(event_type) AS eventType, toString(op) AS op,
       toString(origin) AS origin, toString(namespace) AS namespace, lock_path AS lockPath, toString(class) AS class, holder, session,
       toString(token) AS token, toString(epoch) AS epoch, toString(grant_revision) AS grantRevision, toString(wait_ms) AS waitMs,
       toString(toUnixTimestamp64Milli(wall_time)) AS wallTimeMs, toString(time_estimated) AS timeEstimated, toString(time_error_ms) AS timeErrorMs,
       toString(create_revision) AS createRevision, toString(mod_revision) AS modRevision, toString(version) AS version, lease, value,
       prev_value AS prevValue, toString(unprotected) AS unprotected, toString(rolled_back_by) AS rolledBackBy, toString(superseded_by) AS supersededBy,
       toString(value_bytes) AS valueBytes, value_sha256 AS valueSha256, toString(prev_value_bytes) AS prevValueBytes, prev_value_sha256 AS prevValueSha256,
       toString(toUnixTimestamp64Milli(ingested_at)) AS ingestedAtMs,
       -- Not hashed: whether the row says a value was kept other than whole (v1 periods had none, periodContent.ts).
       toUInt8(value_sha256 != '' OR prev_value_sha256 != '' OR value_bytes != length(value) OR prev_value_bytes != length(prev_value)) AS notWhole
FROM {db:Identifier}.events FINAL
PREWHERE cluster = {cluster:String} AND revision >= {winLo:UInt64} AND revision <= {winHi:UInt64}
WHERE
-- @include exporters/sql/digest_range.sql
ORDER BY revision, key, timeline
SETTINGS prefer_column_name_to_alias = 1
