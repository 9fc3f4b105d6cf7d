-- The recorded gaps of a cluster that begin at or before a revision and lost
-- history (history_lost = 1: a restore whose restored history was readable lost
-- nothing — its rolled-back rows are kept, each timeline reads its own), with
-- the timeline (generation) whose revisions each lost. Which of them concern
-- one timeline is decided beside its lineage (assemble.ts gapsOfTimeline).
-- Parameters: {db:Identifier} {cluster:String} {revision:UInt64}
SELECT from_revision, to_revision, reason, generation
FROM {db:Identifier}.gaps FINAL
WHERE cluster = {cluster:String} AND from_revision <= {revision:UInt64} AND history_lost = 1
ORDER BY from_revision
