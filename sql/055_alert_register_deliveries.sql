-- Alert sinks and the advisory risk register (exporters/alerts/registerDelivery.ts):
-- which stored register runs a sink has delivered (or dead-lettered). A set,
-- not a position: a run becomes visible in whatever order its writer's
-- insert lands, and a set cannot skip one that landed "behind" a checkpoint.
-- Written only after the receiver acknowledged. One row per sink per run.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.alert_register_deliveries
(
    sink        LowCardinality(String),
    run_id      String,
    events      UInt32,
    at          DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(at)
ORDER BY (sink, run_id);
