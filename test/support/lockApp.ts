// A lock API app for tests: the real fastify app with the lock routes on the
// suite's etcd (or a cluster of the test's own), API tokens in the test
// file's own embedded ClickHouse, and a small JSON client over app.inject().
import { Etcd3 } from 'etcd3';
import { Registry } from 'prom-client';
import { ApiTokenVerifier, createApiToken, type Role } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import type { Config, EtcdCluster } from '../../core/config.js';
import { createLogger } from '../../core/logger.js';
import { buildApp, type App, type AppContext } from '../../api/app.js';
import { HealthState } from '../../platform/health.js';
import { lockApi } from '../../api/routes/lockApi.js';
import { lockCluster, startLockEngine, type LockEngineOptions } from '../../roles/lockEngine.js';
import type { LockService } from '../../lock/service.js';
import type { LockClass } from '../../core/keyspace.js';

export interface Reply<T = Record<string, unknown>> {
  status: number;
  body: T;
}

export interface LockApp {
  app: App;
  service: LockService;
  ctx: AppContext;
  call: <T = Record<string, unknown>>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, token: string | undefined, body?: unknown) => Promise<Reply<T>>;
  token: (identity: string, roles: Role[]) => Promise<string>;
  close: () => Promise<void>;
}

/** The lock engine's options; the cluster defaults to the one the config chooses (roles/lockEngine.ts). */
export type LockAppOptions = Omit<LockEngineOptions, 'cluster'> & { cluster?: EtcdCluster };

export async function lockApp(config: Config, store: AuditStore, options: LockAppOptions = {}): Promise<LockApp> {
  const ctx: AppContext = {
    config,
    logger: createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn'),
    store,
    verifier: new ApiTokenVerifier(store),
    health: new HealthState(),
    metrics: new Registry(),
  };
  const engine = await startLockEngine(ctx, { pollMs: 250, ...options, cluster: options.cluster ?? lockCluster(config) });
  const service = engine.service;
  let app: App;
  try {
    app = await buildApp(ctx, [lockApi(service)]);
  } catch (err) {
    await engine.close();
    throw err;
  }
  const call: LockApp['call'] = async (method, url, token, body) => {
    const res = await app.inject({
      method,
      url,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = res.body;
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      // /metrics is text
    }
    return { status: res.statusCode, body: parsed as never };
  };
  return {
    app,
    service,
    ctx,
    call,
    token: async (identity, roles) => (await createApiToken(store, identity, roles)).token,
    close: async () => {
      try {
        await app.close();
      } finally {
        await engine.close();
      }
    },
  };
}

/** A fenced correctness class with a pause test: the strict default. */
export function fencedClass(name: string, namespace: string, overrides: Partial<LockClass> = {}): LockClass {
  return {
    name,
    namespace,
    purpose: 'correctness',
    enforcement: 'fenced',
    ttlSeconds: 15,
    tier: 'entity',
    onQuorumLoss: 'closed',
    fairness: 'memory',
    pauseTest: 'PT-2024-001',
    ...overrides,
  };
}

/** An advisory efficiency class that stays open without quorum. */
export function advisoryClass(name: string, namespace: string, overrides: Partial<LockClass> = {}): LockClass {
  return {
    name,
    namespace,
    purpose: 'efficiency',
    enforcement: 'advisory',
    riskOwner: 'risk@corp',
    waiverExpires: '2099-12-31',
    ttlSeconds: 30,
    tier: 'entity',
    onQuorumLoss: 'open',
    fairness: 'memory',
    ...overrides,
  };
}

export interface EtcdEvent {
  type: 'put' | 'delete';
  key: string;
  value: string;
  revision: string;
  lease: string;
}

/** Every change committed at exactly `revision` (all keys), read back from etcd's log. */
export async function eventsAt(cluster: EtcdCluster, revision: string, root = ''): Promise<EtcdEvent[]> {
  const client = new Etcd3({ hosts: cluster.endpoints });
  try {
    const watcher = await client
      .watch()
      .prefix(root || '/')
      .startRevision(revision)
      .create();
    const events: EtcdEvent[] = [];
    await new Promise<void>((resolve) => {
      let timer = setTimeout(resolve, 1_000);
      watcher.on('data', (res) => {
        for (const e of res.events) {
          const rev = String(e.kv.mod_revision);
          if (rev === revision)
            events.push({
              type: e.type === 'Delete' ? 'delete' : 'put',
              key: e.kv.key.toString(),
              value: e.kv.value.toString(),
              revision: rev,
              lease: String(e.kv.lease),
            });
          else if (BigInt(rev) > BigInt(revision)) {
            clearTimeout(timer);
            return resolve();
          }
        }
        clearTimeout(timer);
        timer = setTimeout(resolve, 300);
      });
    });
    await watcher.cancel();
    return events;
  } finally {
    client.close();
  }
}

/** A bench's caller: an admin and a client token, a fenced class for `ns`, and one kept-alive 15 s session. */
export async function benchCaller(la: LockApp, ns: string, className: string): Promise<{ client: string; session: string; stop: () => void }> {
  const admin = await la.token('bench-admin', ['admin']);
  const client = await la.token(`spiffe://bench/${ns}`, ['client']);
  await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns));
  const session = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
  const keepalive = setInterval(() => void la.call('POST', `/v1/sessions/${session}/keepalive`, client), 5_000);
  keepalive.unref();
  return { client, session, stop: () => clearInterval(keepalive) };
}
