-- The spool records already shipped that these lines touch, newest first: the
-- records under their own ids ('/spool/<id>'), and every end shipped for one
-- of their grants (its value names the grant: grantId; its prev_value is the
-- end's copy of the grant). Spool rows are revision 0: the primary key's
-- (cluster, 0) range is the cluster's spool and nothing else.
-- tailer/sink/spoolShipper.ts checks every line against them (ShippedIds).
-- Parameters: {db:Identifier} {cluster:String} {keys:Array(String)} {grantIds:Array(String)}
SELECT key, event_type, value, prev_value
FROM {db:Identifier}.events
WHERE cluster = {cluster:String} AND revision = 0 AND op = 'spool'
  AND (key IN {keys:Array(String)}
       OR (event_type != 'unprotected-grant' AND JSONExtractString(value, 'grantId') IN {grantIds:Array(String)}))
ORDER BY key, ingested_at DESC
LIMIT 1 BY key
