-- 053: the advisory risk register counts writes that went around the lock API
-- (issue 11, defect 7): grants put straight into etcd (origin 'foreign') and
-- holds deleted by hand (end kind 'deleted': no marker, the lease outlived them),
-- per class over 24 h and 30 d. Registers stored before this read 0.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

ALTER TABLE {db:Identifier}.risk_register
    ADD COLUMN IF NOT EXISTS foreign_grants_24h UInt64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS foreign_grants_30d UInt64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS deleted_24h UInt64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS deleted_30d UInt64 DEFAULT 0;
