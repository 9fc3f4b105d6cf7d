// The tailer's metrics, one set per registry (several clusters share it),
// labelled by cluster only: bounded cardinality, never a key.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { oncePerRegistry } from '../core/metrics.js';

export interface TailerMetrics {
  events: Counter<'cluster'>;
  batchSeconds: Histogram<'cluster'>;
  lagRevisions: Gauge<'cluster'>;
  lagSeconds: Gauge<'cluster'>;
  compactionWindow: Gauge<'cluster'>;
  gaps: Counter<'cluster'>;
  restores: Counter<'cluster'>;
  bypass: Counter<'cluster' | 'kind'>;
  leader: Gauge<'cluster'>;
  watermark: Gauge<'cluster'>;
  headRevision: Gauge<'cluster'>;
  quarantined: Counter<'cluster'>;
  sinkRetries: Counter<'cluster'>;
  spoolShipped: Counter<'cluster'>;
}

export const tailerMetrics: (registry: Registry) => TailerMetrics = oncePerRegistry((registers) => {
  const labelNames = ['cluster'] as const;
  return {
    events: new Counter({ name: 'lockaudit_tailer_events_total', help: 'Audit events written (rate() gives events/s)', labelNames, registers }),
    batchSeconds: new Histogram({
      name: 'lockaudit_tailer_batch_seconds',
      help: 'Time to make one batch durable in ClickHouse',
      labelNames,
      registers,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
    lagRevisions: new Gauge({ name: 'lockaudit_tailer_lag_revisions', help: 'Head revision minus the completeness watermark', labelNames, registers }),
    lagSeconds: new Gauge({ name: 'lockaudit_tailer_lag_seconds', help: 'Age of the oldest change not yet durable', labelNames, registers }),
    compactionWindow: new Gauge({
      name: 'lockaudit_tailer_compaction_window_revisions',
      help: "etcd's compaction window as configured (tailer.compactionWindowRevisions): a lag this large loses history",
      labelNames,
      registers,
    }),
    gaps: new Counter({ name: 'lockaudit_tailer_gaps_total', help: 'History ranges lost to compaction before capture', labelNames, registers }),
    restores: new Counter({
      name: 'lockaudit_tailer_restores_total',
      help: 'etcd restores detected (head below the checkpoint or a new cluster id): a discontinuity recorded with its timeline (also counted in lockaudit_tailer_gaps_total)',
      labelNames,
      registers,
    }),
    bypass: new Counter({
      name: 'lockaudit_tailer_bypass_events_total',
      help: 'Durable hold events made around the lock API: kind foreign-grant (no proof of origin) or deleted (deleted by hand while its lease lived)',
      labelNames: ['cluster', 'kind'],
      registers,
    }),
    leader: new Gauge({ name: 'lockaudit_tailer_leader', help: '1 while this replica is the elected tailer', labelNames, registers }),
    watermark: new Gauge({
      name: 'lockaudit_tailer_watermark_revision',
      help: 'Completeness watermark: every change up to this revision is captured',
      labelNames,
      registers,
    }),
    headRevision: new Gauge({ name: 'lockaudit_tailer_head_revision', help: 'Latest etcd revision seen', labelNames, registers }),
    quarantined: new Counter({
      name: 'lockaudit_tailer_quarantined_total',
      help: 'Changes that could not be decoded or that ClickHouse rejected (kept in quarantine)',
      labelNames,
      registers,
    }),
    sinkRetries: new Counter({ name: 'lockaudit_tailer_sink_retries_total', help: 'ClickHouse insert retries', labelNames, registers }),
    spoolShipped: new Counter({
      name: 'lockaudit_tailer_spool_shipped_total',
      help: 'Fail-open spool lines shipped: unprotected grants and their ends',
      labelNames,
      registers,
    }),
  };
});
