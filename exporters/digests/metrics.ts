// Metrics of the digest worker, on the process registry; labels bounded
// (cluster, outcome, kind). deploy/prometheus alerts on a failing or lagging worker.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { oncePerRegistry } from '../../core/metrics.js';

export interface DigestMetrics {
  runs: Counter<'cluster' | 'outcome'>;
  written: Counter<'cluster' | 'kind'>;
  behind: Gauge<'cluster'>;
  changed: Gauge<'cluster'>;
  lastSuccess: Gauge<'cluster'>;
  runSeconds: Histogram<'cluster'>;
}

export const digestMetrics: (registry: Registry) => DigestMetrics = oncePerRegistry((registers) => ({
  runs: new Counter({
    name: 'lockaudit_digest_runs_total',
    help: 'Digest worker runs by outcome (ok, failed).',
    labelNames: ['cluster', 'outcome'],
    registers,
  }),
  written: new Counter({
    name: 'lockaudit_digests_written_total',
    help: 'Signed digests written: kind period (a newly sealed period) or supersede (a sealed period that changed).',
    labelNames: ['cluster', 'kind'],
    registers,
  }),
  behind: new Gauge({
    name: 'lockaudit_digest_periods_behind',
    help: 'Sealed periods without a digest after the last run (alarm above digests.alarmAfterPeriods).',
    labelNames: ['cluster'],
    registers,
  }),
  changed: new Gauge({
    name: 'lockaudit_digest_periods_changed',
    help: 'Sealed periods whose events changed in a way the record does not explain (never re-signed; LOCKAUDIT_ALARM_DIGEST_CHANGED).',
    labelNames: ['cluster'],
    registers,
  }),
  lastSuccess: new Gauge({
    name: 'lockaudit_digest_last_success_timestamp_seconds',
    help: 'When the last digest run succeeded (Unix seconds).',
    labelNames: ['cluster'],
    registers,
  }),
  runSeconds: new Histogram({
    name: 'lockaudit_digest_run_seconds',
    help: 'Duration of one digest run.',
    labelNames: ['cluster'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
    registers,
  }),
}));
