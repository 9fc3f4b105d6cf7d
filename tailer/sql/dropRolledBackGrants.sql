-- Grant rows of a rolled-back timeline: grants made above the divergence, and
-- end rows of ends above it (a grant from before the divergence reads as held
-- again, as it is in the restored etcd, until its end is captured anew).
-- Parameters: {db:Identifier} {cluster:String} {after:UInt64}
ALTER TABLE {db:Identifier}.grants DELETE WHERE cluster = {cluster:String} AND unprotected = 0 AND (grant_revision > {after:UInt64} OR row_version > {after:UInt64})
