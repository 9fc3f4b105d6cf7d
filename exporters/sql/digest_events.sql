-- One page of a digest period's events (digest_range.sql) in the digest's
-- order (revision, key, timeline), after the page position (paged 0: the
-- first page), every field the events hash covers as a string
-- (exporters/digests/format.ts EVENT_FIELDS), and ingested_at (not hashed).
-- Parameters: {db:Identifier} {cluster:String} {lo:UInt64} {hi:UInt64} {paged:UInt8} {pageRevision:UInt64} {pageKey:String} {pageTimeline:UInt32} {limit:UInt32}
SELECT cluster, toString(timeline) AS timeline, toString(revision) AS revision, key, toString(event_type) AS eventType, toString(op) AS op,
       toString(origin) AS origin, toString(namespace) AS namespace, lock_path AS lockPath, toString(class) AS class, holder, session,
       toString(token) AS token, toString(epoch) AS epoch, toString(grant_revision) AS grantRevision, toString(wait_ms) AS waitMs,
       toString(toUnixTimestamp64Milli(wall_time)) AS wallTimeMs, toString(time_estimated) AS timeEstimated, toString(time_error_ms) AS timeErrorMs,
       toString(create_revision) AS createRevision, toString(mod_revision) AS modRevision, toString(version) AS version, lease, value,
       prev_value AS prevValue, toString(unprotected) AS unprotected, toString(rolled_back_by) AS rolledBackBy, toString(superseded_by) AS supersededBy,
       toString(toUnixTimestamp64Milli(ingested_at)) AS ingestedAtMs
FROM {db:Identifier}.events FINAL
PREWHERE cluster = {cluster:String} AND (revision = 0 OR (revision >= {lo:UInt64} AND revision <= {hi:UInt64}))
WHERE
-- @include exporters/sql/digest_range.sql
    AND ({paged:UInt8} = 0 OR (revision, key, timeline) > ({pageRevision:UInt64}, {pageKey:String}, {pageTimeline:UInt32}))
ORDER BY revision, key, timeline
LIMIT {limit:UInt32}
SETTINGS prefer_column_name_to_alias = 1
