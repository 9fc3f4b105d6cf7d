-- Which holds of one snapshot page had their start captured already: a put at
-- the hold's grant revision, of this timeline, not rolled back. A killed run
-- can leave such rows above the checkpoint; a gap's snapshot must not replace
-- their grant rows (made from those events, grantRowsFromEvents.sql) with one
-- that says its start is unknown and takes the hold's own word for its time.
-- Parameters: {db:Identifier} {cluster:String} {timeline:UInt32} {keys:Array(String)} {lowest:UInt64} {highest:UInt64}
SELECT DISTINCT key, toString(revision) AS put_revision
FROM {db:Identifier}.events
WHERE cluster = {cluster:String}
    AND timeline = {timeline:UInt32}
    AND revision >= {lowest:UInt64} AND revision <= {highest:UInt64}
    AND key IN {keys:Array(String)}
    AND op = 'put'
    AND rolled_back_by = 0
