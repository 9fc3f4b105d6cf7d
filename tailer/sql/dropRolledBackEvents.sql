-- After rollBackEvents: the old timeline's events above the divergence leave
-- `events`, so the restored cluster's own revisions (same numbers) land clean.
-- Parameters: {db:Identifier} {cluster:String} {after:UInt64}
ALTER TABLE {db:Identifier}.events DELETE WHERE cluster = {cluster:String} AND revision > {after:UInt64}
