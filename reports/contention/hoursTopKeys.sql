-- The `top` hottest keys of the window for hours.sql, in contention.sql's
-- ranking (grants DESC, key): the covered hours' per-key counts
-- (contention_key_hours), every other grant of the window counted raw.
-- Covered hours as in hours.sql.
-- Parameters: {db:Identifier} {fromMs:Int64} {toMs:Int64} {namespace:String} {class:String} {top:UInt32} {clusters:Array(String)} {runFrom:Array(UInt32)} {runTo:Array(UInt32)}
SELECT key
FROM
(
    SELECT key, grants
    FROM {db:Identifier}.contention_key_hours
    WHERE (cluster, toUInt32(hour), seal_id, attempt) IN (
            SELECT cluster, toUInt32(hour), seal_id, attempt FROM {db:Identifier}.contention_seals FINAL
            WHERE arrayExists((c, f, t) -> c = cluster AND f <= toUInt32(hour) AND toUInt32(hour) < t, {clusters:Array(String)}, {runFrom:Array(UInt32)}, {runTo:Array(UInt32)}))
        AND ({namespace:String} = '' OR namespace = {namespace:String})
        AND
-- @include grants/scopeBoundHours.sql
        AND ({class:String} = '' OR class = {class:String})
    UNION ALL
    SELECT key, toUInt64(1) AS grants
    FROM {db:Identifier}.grants FINAL
    PREWHERE granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
        AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
        AND ({namespace:String} = '' OR namespace = {namespace:String})
        AND
-- @include grants/scopeBound.sql
        AND ({class:String} = '' OR class = {class:String})
        AND NOT arrayExists((c, f, t) -> c = cluster AND f <= toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) AND toUInt32(toStartOfHour(toDateTime(granted_at, 'UTC'))) < t, {clusters:Array(String)}, {runFrom:Array(UInt32)}, {runTo:Array(UInt32)})
    WHERE (superseded_by = 0 OR rolled_back_by > 0)  -- every timeline's grants, each once (sql/065)
)
GROUP BY key
ORDER BY sum(grants) DESC, key
LIMIT {top:UInt32}
