-- 180: each seal attempt's own identity (sql/130). A seal's rows were told
-- apart by seal_id alone, the clock's microseconds plus a counter in the
-- process that sealed (reports/contention/seal.ts): two processes sealing the
-- same hour in the same millisecond (two workers of the 5-minute job on one
-- ClickHouse server, a stalled job run again beside itself) took the same id,
-- and the report read both attempts' rows as one seal's, counting the hour
-- twice. `attempt` is a random UUID per attempt, written on every row of the
-- attempt and on its seal rows; readers take the (seal_id, attempt) of the
-- hour's newest seal row, so only one attempt's rows are read even when two
-- share an id (equal versions: the engine keeps one seal row). Rows written
-- before 180 have the nil UUID on both sides and still match.
-- Parameters: {db:Identifier}. Idempotent (IF NOT EXISTS).

ALTER TABLE {db:Identifier}.contention_seals ADD COLUMN IF NOT EXISTS attempt UUID AFTER seal_id;

ALTER TABLE {db:Identifier}.contention_hours ADD COLUMN IF NOT EXISTS attempt UUID AFTER seal_id;

ALTER TABLE {db:Identifier}.contention_handoffs ADD COLUMN IF NOT EXISTS attempt UUID AFTER seal_id;

ALTER TABLE {db:Identifier}.contention_pending ADD COLUMN IF NOT EXISTS attempt UUID AFTER seal_id;

ALTER TABLE {db:Identifier}.contention_key_hours ADD COLUMN IF NOT EXISTS attempt UUID AFTER seal_id;
