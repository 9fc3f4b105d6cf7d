-- History gaps that may reach into a timeline's window: gaps detected after
-- the window started (a gap is detected after the history it lost).
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {limit:UInt32}
SELECT cluster, from_revision, to_revision, reason, toUnixTimestamp64Milli(detected_at) AS detected_ms
FROM {db:Identifier}.gaps FINAL
WHERE ({cluster:String} = '' OR cluster = {cluster:String})
    AND detected_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
ORDER BY detected_at DESC
LIMIT {limit:UInt32}
