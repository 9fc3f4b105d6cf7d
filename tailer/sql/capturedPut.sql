-- Whether the tailer captured exactly this put (same key, revision, value) in
-- the current timeline (sql/065: superseded rows are an earlier timeline's).
-- Parameters: {db:Identifier} {cluster:String} {key:String} {revision:UInt64} {value:String}
SELECT count() AS n
FROM {db:Identifier}.events FINAL
WHERE cluster = {cluster:String} AND revision = {revision:UInt64} AND key = {key:String} AND op = 'put' AND value = {value:String} AND superseded_by = 0
