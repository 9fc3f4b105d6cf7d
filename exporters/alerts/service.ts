// The alert sinks as a worker-role background service: per configured
// webhook one delivery loop per etcd cluster (and one for its two-person
// acts when its rules name them), plus one for risk-register waivers when
// its rules name them. Every worker runs this; each loop works
// only while its worker leads that loop's etcd election (sinkLeadership.ts),
// so one worker delivers per sink. close() stops them and waits.
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import type { AlertWebhookConfig } from '../../core/config.js';
import { createEtcdClient } from '../../core/etcd.js';
import type { Logger } from '../../core/logger.js';
import { originSecret } from '../../core/originSecret.js';
import { tokenHashKey } from '../../core/tokenHash.js';
import type { BackgroundService } from '../../platform/jobs.js';
import { alertMetrics, type AlertMetrics } from './alertMetrics.js';
import { RegisterDelivery } from './registerDelivery.js';
import { runWhileElected, sinkElectionName } from './sinkLeadership.js';
import { TwoPersonDelivery } from './twoPersonDelivery.js';
import { WebhookDelivery } from './webhookDelivery.js';

export interface AlertSinksDeps {
  store: AuditStore;
  log: Logger;
  metrics: AlertMetrics;
  sinks: readonly AlertWebhookConfig[];
  /** One etcd client per cluster, in config order; the first also holds the register loops' elections. */
  clusters: ReadonlyArray<{ name: string; client: Etcd3 }>;
  replicaId: string;
  electionTtlSeconds: number;
  /** Tokens leave for a sink only as this key's hash (core/tokenHash.ts). */
  tokenKey: Buffer;
  fetchFn?: typeof fetch;
}

/** Starts every sink's loops under their elections; resolves when `signal` aborted and all stopped. */
export function runAlertSinks(d: AlertSinksDeps, signal: AbortSignal): Promise<void> {
  const lead = (client: Etcd3) => ({ client, log: d.log, replicaId: d.replicaId, ttlSeconds: d.electionTtlSeconds });
  const loops: Array<Promise<void>> = [];
  for (const sink of d.sinks) {
    for (const c of d.clusters) {
      const deps = { store: d.store, log: d.log, metrics: d.metrics, cluster: c.name, sink, tokenKey: d.tokenKey, fetchFn: d.fetchFn };
      const delivery = new WebhookDelivery(deps);
      // The cluster's two-person acts (sql/200) are not in its etcd log: their own loop, under the same election.
      const twoPerson = new TwoPersonDelivery(deps);
      const run = (s: AbortSignal) => Promise.all([delivery.run(s), twoPerson.wanted ? twoPerson.run(s) : undefined]).then(() => undefined);
      loops.push(runWhileElected(lead(c.client), sinkElectionName(sink.name, c.name), run, signal));
    }
    const register = new RegisterDelivery({ store: d.store, log: d.log, metrics: d.metrics, sink, tokenKey: d.tokenKey, fetchFn: d.fetchFn });
    const first = d.clusters[0];
    if (register.wanted && first) loops.push(runWhileElected(lead(first.client), sinkElectionName(sink.name, 'risk-register'), (s) => register.run(s), signal));
  }
  return Promise.allSettled(loops).then(() => undefined);
}

export function alertService(): BackgroundService {
  return {
    name: 'alert-sinks',
    async start(runtime) {
      const abort = new AbortController();
      const sinks = runtime.config.alerts.webhooks;
      const clusters = sinks.length === 0 ? [] : runtime.config.etcd.clusters.map((c) => ({ name: c.name, client: createEtcdClient(c) }));
      const done = runAlertSinks(
        {
          store: runtime.store,
          log: runtime.logger,
          metrics: alertMetrics(runtime.metrics),
          sinks,
          clusters,
          replicaId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
          electionTtlSeconds: runtime.config.tailer.electionTtlSeconds,
          tokenKey: tokenHashKey(originSecret(runtime.config)),
        },
        abort.signal,
      );
      let closing: Promise<void> | undefined;
      return {
        name: 'alert-sinks',
        close: () =>
          (closing ??= (async () => {
            abort.abort();
            await done;
            for (const c of clusters) c.client.close();
          })()),
      };
    },
  };
}
