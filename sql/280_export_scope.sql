-- 280: the scope of the token that requested a compliance export (issue 44):
-- the export holds only that scope's grants, and only a reader whose scope
-- covers it sees its status, manifest and download. Empty: unscoped (every
-- namespace, every cluster), as every export was before this migration.
-- Parameters: {db:Identifier}.

ALTER TABLE {db:Identifier}.exports ADD COLUMN IF NOT EXISTS scope_namespaces Array(String) DEFAULT [];

ALTER TABLE {db:Identifier}.exports ADD COLUMN IF NOT EXISTS scope_clusters Array(String) DEFAULT [];
