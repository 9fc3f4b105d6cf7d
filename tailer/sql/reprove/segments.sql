-- One cluster's proven catch-up segments (sql/160, sql/230), each with the id
-- segmentsWrite.sql picks it by.
-- Parameters: {db:Identifier} {cluster:String}
SELECT concat(toString(timeline), '/', toString(from_revision), '/', toString(through), '/', toString(term)) AS id,
       timeline AS timelineNo, toString(term) AS termText, toString(from_revision) AS fromText, toString(through) AS throughText, proof
FROM {db:Identifier}.catchup_segments FINAL
WHERE cluster = {cluster:String} AND proof != ''
