-- The compliance exports one caller has queued or running (the API's
-- per-caller limit, LOCKAUDIT_EXPORT_MAX_ACTIVE), requested within the last
-- day: a record a crashed job left 'running' stops counting after that.
-- Parameters: {db:Identifier} {who:String}
SELECT toString(count()) AS n
FROM {db:Identifier}.exports FINAL
WHERE requested_by = {who:String} AND status IN ('queued', 'running')
    AND requested_at > now64(3) - INTERVAL 1 DAY
