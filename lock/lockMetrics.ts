// Lock API metrics. Labels are bounded: namespace and class come from the
// class registry (never from a caller's key), reason from a fixed list.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { LockClass } from '../core/keyspace.js';

export const REFUSAL_REASONS = ['timeout', 'sealed', 'quorum-lost', 'session', 'class', 'already-held', 'leak', 'spool', 'abandoned'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

type Labels = { namespace: string; class: string };
const UNKNOWN: Labels = { namespace: 'unknown', class: 'unknown' };

function labels(c: LockClass | undefined): Labels {
  return c ? { namespace: c.namespace, class: c.name } : UNKNOWN;
}

function metric<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

export class LockMetrics {
  readonly grants: Counter<'namespace' | 'class'>;
  readonly unprotected: Counter<'namespace' | 'class'>;
  readonly wait: Histogram<'namespace' | 'class'>;
  readonly hold: Histogram<'namespace' | 'class'>;
  readonly refusals: Counter<'namespace' | 'class' | 'reason'>;
  readonly fencedOut: Counter<'namespace' | 'class'>;
  readonly sealed: Gauge;
  readonly quorumLost: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.grants = metric(
      registry,
      'lockaudit_lock_grants_total',
      () =>
        new Counter({
          name: 'lockaudit_lock_grants_total',
          help: 'Locks granted through etcd (fenced by a token).',
          labelNames: ['namespace', 'class'],
          registers,
        }),
    );
    this.unprotected = metric(
      registry,
      'lockaudit_lock_unprotected_grants_total',
      () =>
        new Counter({
          name: 'lockaudit_lock_unprotected_grants_total',
          help: 'Locks granted without quorum from memory (token 0, spooled).',
          labelNames: ['namespace', 'class'],
          registers,
        }),
    );
    this.wait = metric(
      registry,
      'lockaudit_lock_wait_seconds',
      () =>
        new Histogram({
          name: 'lockaudit_lock_wait_seconds',
          help: 'Time from acquire request to grant.',
          labelNames: ['namespace', 'class'],
          buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
          registers,
        }),
    );
    this.hold = metric(
      registry,
      'lockaudit_lock_hold_seconds',
      () =>
        new Histogram({
          name: 'lockaudit_lock_hold_seconds',
          help: 'Time from grant to release or force-release.',
          labelNames: ['namespace', 'class'],
          buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 300, 1800],
          registers,
        }),
    );
    this.refusals = metric(
      registry,
      'lockaudit_lock_refusals_total',
      () =>
        new Counter({
          name: 'lockaudit_lock_refusals_total',
          help: 'Acquires not granted, by reason.',
          labelNames: ['namespace', 'class', 'reason'],
          registers,
        }),
    );
    this.fencedOut = metric(
      registry,
      'lockaudit_lock_fenced_out_total',
      () =>
        new Counter({
          name: 'lockaudit_lock_fenced_out_total',
          help: 'Releases presenting a token that no longer holds the key: the holder was fenced out.',
          labelNames: ['namespace', 'class'],
          registers,
        }),
    );
    this.sealed = metric(
      registry,
      'lockaudit_lock_sealed',
      () =>
        new Gauge({
          name: 'lockaudit_lock_sealed',
          help: '1 while grants are sealed (a restore into another cluster, or etcd rewound below what was granted).',
          registers,
        }),
    );
    this.quorumLost = metric(
      registry,
      'lockaudit_lock_quorum_lost',
      () => new Gauge({ name: 'lockaudit_lock_quorum_lost', help: '1 while etcd has no reachable quorum.', registers }),
    );
  }

  granted(c: LockClass, waitMs: number, unprotected: boolean): void {
    (unprotected ? this.unprotected : this.grants).inc(labels(c));
    this.wait.observe(labels(c), waitMs / 1000);
  }

  released(c: LockClass | undefined, heldMs: number): void {
    this.hold.observe(labels(c), Math.max(0, heldMs) / 1000);
  }

  refused(c: LockClass | undefined, reason: RefusalReason): void {
    this.refusals.inc({ ...labels(c), reason });
  }

  fenced(c: LockClass | undefined): void {
    this.fencedOut.inc(labels(c));
  }
}
