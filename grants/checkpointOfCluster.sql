-- One cluster's checkpoint in effect (checkpointInEffect.sql, the one
-- definition), as the tailer reads it at each start and before each write.
-- No row: the cluster has written no checkpoint yet.
-- Parameters: {cluster:String} (the database's comes with the include)
SELECT revision, term, leader FROM (
-- @include grants/checkpointInEffect.sql
) WHERE cluster = {cluster:String}
