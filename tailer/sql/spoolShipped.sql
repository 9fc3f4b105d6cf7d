-- The spool records already shipped under these event keys ('/spool/<id>',
-- revision 0: the primary key's prefix), newest first: what a spool id named
-- when it was first shipped (tailer/spoolShipper.ts checks every line against
-- it, so a reused id or an end carrying another copy of its grant is
-- quarantined instead of replacing what was shipped).
-- Parameters: {db:Identifier} {cluster:String} {keys:Array(String)}
SELECT key, event_type, value
FROM {db:Identifier}.events
WHERE cluster = {cluster:String} AND revision = 0 AND key IN {keys:Array(String)} AND op = 'spool'
ORDER BY key, ingested_at DESC
LIMIT 1 BY key
