-- Which of some holds had their start captured already: a put at the hold's
-- grant revision that the current history still holds — of this timeline, or
-- of an earlier one of the same history that a restore carried (not rolled
-- back). A killed run can leave such puts above its checkpoint, inside what
-- later became a recorded gap; then
--   - a gap's snapshot must not replace their grant rows (made from those
--     events, grantRowsFromEvents.sql) with one that says the start is unknown
--     and takes the hold's own word for its time (30-minute chaos run, seed 45);
--   - the hold's delete, decoded later, names its start known, and a foreign
--     hold's grant time is then the one its put was given (seed 46), not its
--     claimed `at` (tailer/watch/windowRunner.ts).
-- The caller keeps only a put whose value is the hold's own (gaps.ts). A store
-- row is no proof: whoever can write the store could add such a put; the
-- digests name a row added to a sealed period (docs/architecture.md, what is
-- not yet proven).
-- FINAL: a restore marks rolled-back rows by writing them again.
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32} {keys:Array(String)} {lowest:UInt64} {highest:UInt64}
SELECT DISTINCT key, toString(revision) AS put_revision, value, value_bytes, value_sha256
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String}
    AND timeline <= {timeline:UInt32}
    AND timeline >= (
        -- The first timeline of the current history: a restore sharing nothing began a new one (sql/065).
        SELECT ifNull(max(generation), 0) FROM {db:Identifier}.etcd_timelines FINAL
        WHERE cluster = {cluster:String} AND shares_history = 0 AND generation > 0 AND generation <= {timeline:UInt32})
    AND revision >= {lowest:UInt64} AND revision <= {highest:UInt64}
    AND key IN {keys:Array(String)}
    AND op = 'put' AND event_type = 'grant'
    AND rolled_back_by = 0
