-- 090: one gap no longer replaces another that starts at the same revision.
-- gaps was a ReplacingMergeTree keyed (cluster, from_revision): a restore gap
-- recorded from the same revision as an earlier compaction gap (a restore
-- right after a compaction the tailer had not got past) replaced it under
-- FINAL, and the compaction's lost range read as rolled back instead — found
-- by the chaos checker (issue 20), which holds each gap to the fault that
-- explains it. `identity` ('<kind>:<generation>', written by recordGap) joins
-- the key; rows written before this migration keep '' (one value, so their
-- parts stay sorted under the new key).
-- Parameters: {db:Identifier}. Idempotent: the column is added only once, and
-- the key then already ends with it.

ALTER TABLE {db:Identifier}.gaps ADD COLUMN IF NOT EXISTS identity String, MODIFY ORDER BY (cluster, from_revision, identity);
