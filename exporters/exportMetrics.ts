// Metrics of the exporters, on the process registry. Labels are bounded:
// cluster, dataset, format, outcome — never a key, an export id or a token.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { oncePerRegistry } from '../core/metrics.js';

export interface ExportMetrics {
  archived: Counter<'cluster'>;
  archiveErrors: Counter<'cluster'>;
  archiveLatency: Histogram<'cluster'>;
  unarchived: Gauge<'cluster'>;
  lateUnarchived: Gauge<'cluster'>;
  oldestUnarchivedAge: Gauge<'cluster'>;
  historyFiles: Counter<'dataset' | 'outcome'>;
  exportRows: Counter<'kind' | 'format'>;
  exportJobs: Counter<'kind' | 'outcome'>;
}

/** The exporter metrics of a registry, created once per registry. */
export const exportMetrics: (registry: Registry) => ExportMetrics = oncePerRegistry((registers) => ({
  archived: new Counter({
    name: 'lockaudit_force_archived_total',
    help: 'Force-release records written to the archive bucket.',
    labelNames: ['cluster'],
    registers,
  }),
  archiveErrors: new Counter({
    name: 'lockaudit_force_archive_errors_total',
    help: 'Archiver passes that failed (etcd or S3 unavailable); retried.',
    labelNames: ['cluster'],
    registers,
  }),
  archiveLatency: new Histogram({
    name: 'lockaudit_force_archive_latency_seconds',
    help: 'From force-release approval to the archived object.',
    labelNames: ['cluster'],
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
    registers,
  }),
  unarchived: new Gauge({
    name: 'lockaudit_force_unarchived_records',
    help: 'Force-release records in etcd not yet archived.',
    labelNames: ['cluster'],
    registers,
  }),
  lateUnarchived: new Gauge({
    name: 'lockaudit_force_unarchived_late_records',
    help: 'Force-release records not archived within the alarm threshold (alarm when > 0).',
    labelNames: ['cluster'],
    registers,
  }),
  oldestUnarchivedAge: new Gauge({
    name: 'lockaudit_force_unarchived_oldest_age_seconds',
    help: 'Age of the oldest force-release record not yet archived.',
    labelNames: ['cluster'],
    registers,
  }),
  historyFiles: new Counter({
    name: 'lockaudit_history_files_total',
    help: 'Parquet history files by outcome (written, skipped as complete, before-capture: a day that ended before its cluster was captured gets none, failed).',
    labelNames: ['dataset', 'outcome'],
    registers,
  }),
  exportRows: new Counter({ name: 'lockaudit_export_rows_total', help: 'Rows written to exports.', labelNames: ['kind', 'format'], registers }),
  exportJobs: new Counter({ name: 'lockaudit_export_jobs_total', help: 'Export jobs by outcome.', labelNames: ['kind', 'outcome'], registers }),
}));
