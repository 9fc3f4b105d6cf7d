-- What a grant row and one of its events say, column by column, for a row
-- grants_check.sql or grants_check_events.sql found disagreeing by hash:
-- grantsCheck.ts names the columns that differ. One grant (its identity) and
-- one event (cluster, revision, key, timeline).
-- Parameters: {db:Identifier} {cluster:String} {key:String} {grantRevision:UInt64} {spoolId:String} {timeline:UInt32} {eventRevision:UInt64} {eventKey:String} {eventTimeline:UInt32}
SELECT g.fields AS grantFields, e.fields AS eventFields
FROM
(
    SELECT [namespace, lock_path, class, holder, session, toString(token), toString(epoch), toString(wait_ms), toString(origin), toString(unprotected),
            toString(toUnixTimestamp64Milli(granted_at)), toString(toUnixTimestamp64Milli(assumeNotNull(ended_at))), toString(ended_at_error_ms)] AS fields
    FROM {db:Identifier}.grants FINAL
    WHERE cluster = {cluster:String} AND key = {key:String} AND grant_revision = {grantRevision:UInt64} AND spool_id = {spoolId:String} AND timeline = {timeline:UInt32}
) AS g,
(
    SELECT [namespace, lock_path, class, holder, session, toString(token), toString(epoch), toString(wait_ms), toString(origin), toString(unprotected),
            toString(toUnixTimestamp64Milli(wall_time)), toString(toUnixTimestamp64Milli(wall_time)), toString(time_error_ms)] AS fields
    FROM {db:Identifier}.events FINAL
    WHERE cluster = {cluster:String} AND revision = {eventRevision:UInt64} AND key = {eventKey:String} AND timeline = {eventTimeline:UInt32}
) AS e
