-- 290: what the store keeps of a value (core/valueBound.ts; docs/operations.md,
-- "What the store keeps of a value"). etcd takes values up to 1.5 MiB; one
-- written around the lock API was kept whole in `events` (value, prev_value)
-- and `quarantine`, so every page, digest window and buffer carrying values
-- grew with an insider's writes. A value above 64 KiB is now kept as its
-- first 64 KiB (whole characters), its size in bytes and its sha256 (hex);
-- `*_sha256` is '' when the value is kept whole, and `*_bytes` then defaults
-- to its length, so rows written before read as what they are: whole.
-- Parameters: {db:Identifier}. Idempotent.

ALTER TABLE {db:Identifier}.events
    ADD COLUMN IF NOT EXISTS value_bytes UInt32 DEFAULT length(value),
    ADD COLUMN IF NOT EXISTS value_sha256 String DEFAULT '',
    ADD COLUMN IF NOT EXISTS prev_value_bytes UInt32 DEFAULT length(prev_value),
    ADD COLUMN IF NOT EXISTS prev_value_sha256 String DEFAULT '';

ALTER TABLE {db:Identifier}.quarantine
    ADD COLUMN IF NOT EXISTS value_bytes UInt32 DEFAULT length(value),
    ADD COLUMN IF NOT EXISTS value_sha256 String DEFAULT '';
