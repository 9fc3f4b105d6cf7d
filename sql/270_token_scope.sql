-- 270: a token's read scope (issue 44): the namespaces and etcd clusters whose
-- per-key data it may read. Empty: every namespace (clusters: every cluster),
-- as every token read before this migration.
-- Parameters: {db:Identifier}.

ALTER TABLE {db:Identifier}.api_tokens ADD COLUMN IF NOT EXISTS scope_namespaces Array(String) DEFAULT [];

ALTER TABLE {db:Identifier}.api_tokens ADD COLUMN IF NOT EXISTS scope_clusters Array(String) DEFAULT [];
