-- An alert sink's next batch of a cluster's log in one etcd timeline: audit
-- events and recorded gaps (a gap sits at its first lost revision, key ''),
-- strictly after the sink's position and at or before that timeline's
-- checkpoint (durable), in (revision, key) order. The events of timeline
-- {generation} (its rows carry {timeline}, sql/065): rows of it and of the
-- timelines before it that it had not superseded; its gaps: those recorded
-- with its generation (its restore gap, its compactions). Only the kinds the
-- sink's rules can match are read (a grant whose origin is 'foreign' is read
-- for 'foreign-grant' too, and so is a foreign hold seen only in a gap or
-- restore snapshot — written while no tailer ran, its put never watched: it
-- sits at the snapshot's revision).
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32} {generation:UInt32} {afterRevision:UInt64} {afterKey:String} {throughRevision:UInt64} {kinds:Array(String)} {limit:UInt32}
SELECT revision, key, event_type, namespace, class, holder, session, token, epoch, grant_revision, wall_ms, time_estimated, value, gap_to, reason, origin, timeline, identity
FROM
(
    SELECT revision, key, toString(event_type) AS event_type, toString(namespace) AS namespace, toString(class) AS class, holder, session, token, epoch, grant_revision,
           toUnixTimestamp64Milli(wall_time) AS wall_ms, time_estimated, value, toUInt64(0) AS gap_to, '' AS reason, toString(origin) AS origin, timeline, '' AS identity
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String}
        AND (revision, key) > ({afterRevision:UInt64}, {afterKey:String})
        AND revision <= {throughRevision:UInt64}
        AND timeline <= {timeline:UInt32} AND (superseded_by = 0 OR superseded_by > {generation:UInt32})
        AND ((op IN ('put', 'delete')
                AND (has({kinds:Array(String)}, toString(event_type))
                    OR (event_type = 'grant' AND origin = 'foreign' AND has({kinds:Array(String)}, 'foreign-grant'))))
            OR (op = 'snapshot' AND event_type = 'snapshot-hold' AND origin = 'foreign' AND has({kinds:Array(String)}, 'foreign-grant')
                -- a hold whose put was watched was delivered at its grant
                AND (key, grant_revision) NOT IN (
                    SELECT key, revision FROM {db:Identifier}.events
                    WHERE cluster = {cluster:String} AND event_type = 'grant' AND origin = 'foreign' AND op = 'put')))
    UNION ALL
    SELECT from_revision AS revision, '' AS key, 'gap' AS event_type, '' AS namespace, '' AS class, '' AS holder, '' AS session, toUInt64(0) AS token, toUInt32(0) AS epoch,
           toUInt64(0) AS grant_revision, toUnixTimestamp64Milli(detected_at) AS wall_ms, toUInt8(0) AS time_estimated, '' AS value, to_revision AS gap_to, reason, 'api' AS origin,
           toUInt32(0) AS timeline, identity
    FROM {db:Identifier}.gaps FINAL
    WHERE cluster = {cluster:String}
        AND has({kinds:Array(String)}, 'gap')
        AND generation = {generation:UInt32}
        AND (from_revision, '') > ({afterRevision:UInt64}, {afterKey:String})
        AND from_revision <= {throughRevision:UInt64}
)
ORDER BY revision, key
LIMIT {limit:UInt32}
