-- The replay check (tailer/decode/replays.ts): grants already captured on these
-- keys whose signed fields (core/holdProof.ts) equal one of the batch's, at
-- any grant revision. Reads the grants table by its primary key prefix
-- (cluster, key); granted_at narrows it to the instants the batch names.
-- api_revisions: the grant revisions of the group stored with a row `api`
-- (a copy stored before its original keeps `api` to its end: replays.ts).
-- Parameters: {db:Identifier} {cluster:String} {keys:Array(String)} {ats:Array(Int64)}
SELECT key, holder, session, class, epoch, wait_ms, toUnixTimestamp64Milli(granted_at) AS granted_at_ms, toString(min(grant_revision)) AS first_revision,
       arrayMap(r -> toString(r), groupUniqArrayIf(grant_revision, origin = 'api')) AS api_revisions
FROM {db:Identifier}.grants
WHERE cluster = {cluster:String}
  AND key IN {keys:Array(String)}
  AND spool_id = ''
  AND toUnixTimestamp64Milli(granted_at) IN {ats:Array(Int64)}
GROUP BY key, holder, session, class, epoch, wait_ms, granted_at_ms
