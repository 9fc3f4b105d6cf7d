// Drives the lock API like a fleet: registers the classes, starts the
// workers and the two operators, optionally takes two of three etcd members
// down for the middle third of the run, and collects the counts.
import { setTimeout as sleep } from 'node:timers/promises';
import { LockauditError } from '../../core/errors.js';
import { runOperators, type Operator } from './operators.js';
import { Rng } from './rng.js';
import { SimStats } from './stats.js';
import type { Transport } from './transport.js';
import { HoldBoard, SimWorker } from './worker.js';
import { simNamespaces } from './workload.js';

export interface SimTokens {
  admin: string;
  operators: [Operator, Operator];
  /** One per worker: identities must differ, since a session is per (identity, TTL). */
  clients: Array<{ identity: string; token: string }>;
}

export interface OutageControl {
  /** Stops two of the three etcd members. */
  stop(): Promise<void>;
  /** Starts them again. */
  start(): Promise<void>;
}

export interface SimulateOptions {
  seed: number;
  durationSeconds: number;
  workers: number;
  /** Target acquires per second, whole fleet. */
  rate: number;
  api: Transport;
  tokens: SimTokens;
  outage?: OutageControl;
  progress?: (message: string) => void;
}

/** The identity of worker i (namespaces are dealt round-robin). */
export function workerIdentity(i: number): string {
  const namespaces = simNamespaces(Date.now());
  return `spiffe://sim.lockaudit/${namespaces[i % namespaces.length]?.name}/worker-${i}`;
}

export async function simulate(options: SimulateOptions): Promise<SimStats> {
  const progress = options.progress ?? (() => {});
  const namespaces = simNamespaces(Date.now());
  for (const ns of namespaces) {
    for (const { lockClass } of ns.classes) {
      const res = await options.api.request('PUT', `/v1/classes/${lockClass.name}`, options.tokens.admin, lockClass);
      if (res.status !== 200)
        throw new LockauditError('LOCKAUDIT_ERR_SIMULATE_SETUP', `class ${lockClass.name}: the API answered ${res.status}: ${String(res.body.message ?? '')}`);
    }
  }
  if (options.tokens.clients.length < options.workers) {
    throw new LockauditError('LOCKAUDIT_ERR_SIMULATE_SETUP', `--workers ${options.workers} needs as many client tokens; got ${options.tokens.clients.length}`);
  }
  progress(
    `${namespaces.reduce((n, ns) => n + ns.classes.length, 0)} classes in ${namespaces.length} namespaces; ${options.workers} workers, ~${options.rate} acquires/s for ${options.durationSeconds} s (seed ${options.seed})${options.outage ? '; etcd outage in the middle third' : ''}`,
  );

  const stats = new SimStats();
  const board = new HoldBoard();
  const until = Date.now() + options.durationSeconds * 1000;
  const meanGapMs = (1000 * options.workers) / options.rate;
  const tasks: Promise<void>[] = [];
  for (let i = 0; i < options.workers; i++) {
    const client = options.tokens.clients[i] as { identity: string; token: string };
    const worker = new SimWorker({
      index: i,
      identity: client.identity,
      token: client.token,
      ns: namespaces[i % namespaces.length]!,
      rng: Rng.derive(options.seed, i),
      api: options.api,
      stats,
      board,
      meanGapMs,
      until,
    });
    tasks.push(worker.run());
  }
  tasks.push(
    runOperators({ operators: options.tokens.operators, api: options.api, board, rng: Rng.derive(options.seed, 10_000), stats, until, meanGapMs: 8_000 }),
  );
  if (options.outage) tasks.push(outageTimeline(options.outage, options.durationSeconds, stats, progress));
  const ticker = setInterval(
    () =>
      progress(
        `${Math.round((Date.now() - stats.startedAt) / 1000)} s: ${stats.get('grants')} grants, ${stats.get('grants unprotected (token 0)')} unprotected, ${stats.get('not granted in time (409)')} timeouts`,
      ),
    10_000,
  );
  ticker.unref();
  try {
    const results = await Promise.allSettled(tasks);
    for (const r of results) if (r.status === 'rejected') stats.inc(`actor failed: ${(r.reason as Error).message.slice(0, 60)}`);
  } finally {
    clearInterval(ticker);
  }
  return stats;
}

async function outageTimeline(outage: OutageControl, durationSeconds: number, stats: SimStats, progress: (m: string) => void): Promise<void> {
  await sleep(durationSeconds * 350);
  progress('outage: stopping etcd-2 and etcd-3 (no quorum)');
  await outage.stop();
  stats.inc('outages');
  await sleep(durationSeconds * 300);
  progress('outage over: starting etcd-2 and etcd-3');
  await outage.start();
}
