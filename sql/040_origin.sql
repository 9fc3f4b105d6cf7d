-- 040: who wrote a hold (issue 11 defect 7). 'api' when the hold carried
-- the lock API's proof of origin (core/holdProof.ts), 'foreign' when it was
-- put straight into etcd (etcdctl, a misbehaving client): on the hold's
-- events (grant and end) and on its grant row. Rows written before this
-- migration, and every row that is not about a hold, read 'api'.
-- end_kind also takes 'deleted' (no marker, lease still alive): a String, no change needed.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

ALTER TABLE {db:Identifier}.events ADD COLUMN IF NOT EXISTS origin LowCardinality(String) DEFAULT 'api';

ALTER TABLE {db:Identifier}.grants ADD COLUMN IF NOT EXISTS origin LowCardinality(String) DEFAULT 'api';
