-- 250: grant seals (issue 40 item 3). A grant row changes when its hold ends,
-- so no digest hashes `grants`; every export checked every grant of its range
-- against the events instead (exporters/grantsCheck.ts), which was most of
-- its time. Once a digest period's events are sealed and every grant granted
-- in it has ended, its rows are final: the digest worker checks them against
-- the events once and signs a seal — the period's row count and a hash of its
-- rows — with the digest key (exporters/grantSeals.ts). An export then
-- re-checks only the periods whose rows no longer hash to a valid seal (or
-- have none). A seal is a signed body; whoever can write the store can delete
-- one (that period is checked in full again) but not make one.
-- Parameters: {db:Identifier}. Idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.grant_seals
(
    cluster       LowCardinality(String),
    period_start  DateTime64(3, 'UTC'),
    period_end    DateTime64(3, 'UTC'),
    sealed_at     DateTime64(3, 'UTC'),
    body          String,
    signature     String
)
ENGINE = ReplacingMergeTree(sealed_at)
ORDER BY (cluster, period_start, period_end);
