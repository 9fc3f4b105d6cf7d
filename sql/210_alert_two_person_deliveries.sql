-- Alert sinks and the two-person log (exporters/alerts/twoPersonDelivery.ts,
-- sql/200): which rows of a cluster's two-person log a sink has delivered (or
-- dead-lettered). A set, not a position, for the reason sql/055 gives: the
-- lock API processes write their rows with their own clocks, so a row can
-- land "behind" any position by time. row_id is the hash of the whole row
-- (the log has no id column; two identical rows are one act). Written only
-- after the receiver acknowledged.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.alert_two_person_deliveries
(
    sink        LowCardinality(String),
    cluster     LowCardinality(String),
    row_id      String,
    at          DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(at)
ORDER BY (sink, cluster, row_id);
