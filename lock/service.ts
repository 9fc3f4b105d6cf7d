// The embedded lock service for one etcd cluster: assembles the parts and
// exposes the operations the routes call. Owns its etcd client when it made
// it; close() is idempotent and closes everything in reverse order.
import type { Etcd3, Watcher } from 'etcd3';
import { createEtcdClient } from '../core/etcd.js';
import type { Registry } from 'prom-client';
import type { EtcdCluster } from '../core/config.js';
import { CANARY_CLASS, CANARY_NAMESPACE, type LockClass } from '../core/keyspace.js';
import { LockauditError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { spoolPath } from '../core/spool.js';
import { acquire, type AcquireInput, type Grant } from './acquire.js';
import { Classes, type CachedClass } from './classes.js';
import type { LockParts } from './context.js';
import { EpochState } from './epoch.js';
import {
  approveEpochAdvance,
  listEpochRequests,
  readEpochRequest,
  requestEpochAdvance,
  withdrawEpochRequest,
  type EpochAdvanced,
  type EpochAdvancePending,
  type EpochAdvanceRequested,
} from './epochAdvance.js';
import { FailOpenGrants } from './failOpen.js';
import {
  approveForceRelease,
  listForceRequests,
  readForceRequest,
  requestForceRelease,
  withdrawForceRequest,
  type ForceApproved,
  type ForcePending,
  type ForceRequested,
} from './forceRelease.js';
import type { Withdrawn } from './twoPerson.js';
import { HintWatches } from './hints.js';
import { inspect, type LockView } from './inspect.js';
import { LockKeys } from './kv.js';
import { LockEtcd } from './lockEtcd.js';
import { LockMetrics } from './lockMetrics.js';
import { MarkerLease } from './markers.js';
import { highWaterPath, RevisionHighWater } from './revisionHighWater.js';
import type { GrantHighWaterSource } from './sharedHighWater.js';
import { release, type Released, type ReleaseInput } from './release.js';
import { Sessions, type ClosedSession, type SessionInfo } from './sessions.js';
import { SpoolWriter } from './spool.js';
import { Waiters, type WaiterLimits } from './waiters.js';
import { alarm, type RaisedAlarm } from '../platform/alarms.js';
import type { LockAlarms, TwoPersonLog } from './context.js';

// What the API's routes need besides the service itself: they import lock/service.ts only.
export type { Grant } from './acquire.js';
export { SESSION_TTL_DEFAULT, SESSION_TTL_MAX, SESSION_TTL_MIN } from './sessions.js';

function lockAlarms(health: { raise(alarm: RaisedAlarm): void }, cluster: string): LockAlarms {
  return { foreignWrite: (facts) => health.raise(alarm('LOCKAUDIT_ALARM_FOREIGN_WRITE', { cluster }, facts)) };
}

export interface LockServiceOptions {
  cluster: EtcdCluster;
  dataDir: string;
  /** Key of the proof of origin written into each hold (core/proof.ts). */
  originSecret: Buffer;
  logger: Logger;
  metrics: Registry;
  /** An etcd client to use (not closed by the service); by default one is created and owned. */
  client?: Etcd3;
  /** Prefix of every key written; empty in production (tests use a private keyspace). */
  root?: string;
  /** Per-call deadline, ms (default 2000). */
  callTimeoutMs?: number;
  /** Waiter fallback poll, ms (default 1000). */
  pollMs?: number;
  /** Quorum probe interval while lost, ms (default 1000). */
  probeIntervalMs?: number;
  /** Spool file; default <dataDir>/spool/<cluster>.jsonl. */
  spoolFile?: string;
  /**
   * Where this process finds the tokens other processes already issued (the audit store's highest captured
   * grant): its mark is seeded from it, so a new process on a rewound etcd is sealed too. Absent: only this
   * process's own high-water file. Only for the production keyspace (root ''), the one the tailer captures.
   */
  highWaterSource?: GrantHighWaterSource;
  /** Where the life of two-person requests is recorded (the audit store's two_person_log); absent: logged only. */
  twoPersonLog?: TwoPersonLog;
  /** Where refused forgeries are alarmed (the process's readiness state); absent: logged only. */
  health?: { raise(alarm: RaisedAlarm): void };
  /** How often the shared high-water is read again besides at start and after etcd was unreachable, ms (default 30000; 0: not periodically). */
  highWaterRefreshMs?: number;
  /** Acquires in flight per key and in all (lock/waiters.ts; default 256 and 10 000). */
  waiterLimits?: WaiterLimits;
  /** Pending two-person requests per kind, and force requests per lock (default 64 and 4). */
  pendingRequestLimits?: { total: number; perKey: number };
}

export class LockService {
  readonly parts: LockParts;
  readonly spoolFile: string;
  readonly #client: Etcd3;
  readonly #ownsClient: boolean;
  readonly #highWater: RevisionHighWater;
  /** The mark is seeded from a shared high-water source. */
  readonly #shared: boolean;
  readonly #highWaterRefreshMs: number;
  #refreshTimer: NodeJS.Timeout | undefined;
  #restartWatch: Promise<Watcher | undefined> | undefined;
  #closed: Promise<void> | undefined;

  constructor(options: LockServiceOptions) {
    this.#ownsClient = options.client === undefined;
    this.#client = options.client ?? createEtcdClient(options.cluster, { callTimeoutMs: options.callTimeoutMs ?? 2_000 });
    const logger = options.logger.child({ component: 'lock', cluster: options.cluster.name });
    const keys = new LockKeys(options.root ?? '');
    const metrics = new LockMetrics(options.metrics);
    const etcd = new LockEtcd(this.#client, {
      callTimeoutMs: options.callTimeoutMs,
      probeIntervalMs: options.probeIntervalMs,
      probeKey: keys.epoch(),
      onQuorumChange: (lost) => {
        metrics.quorumLost.set(lost ? 1 : 0);
        if (lost) logger.error('etcd quorum lost: closed classes are refused, open classes granted from memory (token 0, spooled)');
        else logger.warn('etcd quorum is back');
        // etcd may come back restored: the next grant first reads the shared high-water again.
        epoch.sharedStale();
      },
    });
    const highWater = new RevisionHighWater(highWaterPath(options.dataDir, options.cluster.name, options.root ?? ''));
    this.#highWater = highWater;
    const epoch = new EpochState(
      etcd,
      keys,
      options.originSecret,
      (sealed) => {
        metrics.sealed.set(sealed ? 1 : 0);
        if (sealed)
          logger.error(
            { clusterId: epoch.clusterId, recorded: epoch.record?.clusterId, reason: epoch.sealReason() },
            'etcd was restored or rewound: grants sealed until an epoch advance',
          );
      },
      highWater,
      // The tailer captures the production keyspace only: a test root has no captured grants of its own.
      options.highWaterSource && !options.root ? { source: options.highWaterSource, cluster: options.cluster.name } : undefined,
    );
    this.#shared = options.highWaterSource !== undefined && !options.root;
    this.#highWaterRefreshMs = options.highWaterRefreshMs ?? 30_000;
    const markers = new MarkerLease(etcd, keys, options.originSecret);
    const waiters = new Waiters(options.waiterLimits);
    this.spoolFile = options.spoolFile ?? spoolPath(options.dataDir, options.cluster.name);
    this.parts = {
      cluster: options.cluster.name,
      keys,
      etcd,
      epoch,
      classes: new Classes(etcd, keys, options.originSecret),
      sessions: new Sessions(etcd, keys, markers),
      markers,
      waiters,
      hints: new HintWatches(this.#client, logger, (key) => waiters.notify(key)),
      failOpen: new FailOpenGrants(new SpoolWriter(this.spoolFile), options.cluster.name, logger),
      metrics,
      logger,
      pollMs: options.pollMs ?? 1_000,
      originSecret: options.originSecret,
      alarms: options.health ? lockAlarms(options.health, options.cluster.name) : undefined,
      twoPersonLog: options.twoPersonLog,
      pendingRequestLimits: options.pendingRequestLimits ?? { total: 64, perKey: 4 },
    };
  }

  /** Loads (or creates) /sys/epoch; a failure is logged, not fatal: the first request retries. */
  async start(): Promise<void> {
    try {
      await this.parts.epoch.ready();
    } catch (err) {
      this.parts.logger.warn({ err: (err as Error).message }, 'etcd or the shared high-water not reachable at start; the lock API retries on first use');
    }
    if (!this.#shared || this.#closed) return;
    // A process that makes no call while etcd is restored never sees it fail. A watch's stream breaks when
    // etcd goes away (this one carries nearly nothing: /sys/epoch changes only on advances), so the next grant
    // reads the shared high-water again first: what others granted meanwhile counts.
    const { epoch, logger } = this.parts;
    this.#restartWatch = this.#client
      .watch()
      .key(this.parts.keys.epoch())
      .create()
      .then((w) => {
        w.on('disconnected', () => epoch.sharedStale());
        w.on('error', (err) => logger.debug({ err: err.message }, 'etcd restart watch failed; the shared high-water is still read periodically'));
        return w;
      })
      .catch((err: Error) => {
        logger.warn({ err: err.message }, 'etcd restart watch not created; the shared high-water is still read periodically');
        return undefined;
      });
    if (this.#highWaterRefreshMs > 0) {
      this.#refreshTimer = setInterval(() => {
        this.parts.epoch
          .refreshShared()
          .catch((err: unknown) => this.parts.logger.warn({ err: (err as Error).message }, 'shared high-water not read; the last one read stays in force'));
      }, this.#highWaterRefreshMs);
      this.#refreshTimer.unref();
    }
  }

  /** High-water writes made since start (group commit: concurrent grants share one). */
  get highWaterWrites(): number {
    return this.#highWater.writes;
  }

  createSession(identity: string, ttlSeconds: number): Promise<SessionInfo> {
    return this.parts.sessions.create(identity, ttlSeconds);
  }

  keepAlive(identity: string, id: string): Promise<{ id: string; ttlSeconds: number }> {
    return this.parts.sessions.keepAlive(identity, id);
  }

  async closeSession(identity: string, id: string): Promise<ClosedSession> {
    const closed = await this.parts.sessions.close(identity, id);
    for (const key of closed.released) this.parts.waiters.notify(key);
    return closed;
  }

  acquire(input: AcquireInput): Promise<Grant> {
    return acquire(this.parts, input);
  }

  release(input: ReleaseInput): Promise<Released> {
    return release(this.parts, input);
  }

  inspect(identity: string, key: string): Promise<LockView> {
    return inspect(this.parts, identity, key);
  }

  /** The class as etcd holds it, with its proof state (an unproven class is shown, never granted under). */
  getClass(name: string): Promise<CachedClass> {
    return this.parts.classes.read(name, { fresh: true });
  }

  /** Every class etcd holds, each with its proof state (what an upgrade's adoption works through). */
  listClasses(): Promise<Array<{ name: string; entry: CachedClass | undefined; modRevision: string }>> {
    return this.parts.classes.list();
  }

  /** `canary`: the platform canary's own class (roles/canary/loop.ts); its name and namespace are refused to everyone else. */
  putClass(value: LockClass, options: { canary?: boolean } = {}): Promise<CachedClass> {
    if ((value.name === CANARY_CLASS || value.namespace === CANARY_NAMESPACE) && !options.canary)
      return Promise.reject(
        new LockauditError(
          'LOCKAUDIT_ERR_VALIDATION',
          value.name === CANARY_CLASS
            ? `params.name: class ${CANARY_CLASS} is reserved for the platform's canary`
            : `body.namespace: ${CANARY_NAMESPACE} is reserved for the platform's canary`,
        ),
      );
    return this.parts.classes.put(value);
  }

  requestForceRelease(identity: string, input: { key: string; reason: string; revokeSession: boolean }): Promise<ForceRequested> {
    return requestForceRelease(this.parts, identity, input);
  }

  listForceRequests(): Promise<{ requests: ForcePending[]; unreadable: number }> {
    return listForceRequests(this.parts);
  }

  readForceRequest(id: string): Promise<ForcePending> {
    return readForceRequest(this.parts, id);
  }

  /** `requestHash`: the hash of the request as the approver was shown it. */
  approveForceRelease(identity: string, id: string, requestHash: string): Promise<ForceApproved> {
    return approveForceRelease(this.parts, identity, id, requestHash);
  }

  /** Rejects (another lock-operator) or cancels (its requester) a pending force-release. */
  withdrawForceRequest(identity: string, id: string, reason: string): Promise<Withdrawn> {
    return withdrawForceRequest(this.parts, identity, id, reason);
  }

  /** `adopt`: prove an unproven /sys/epoch as it is (an upgrade) rather than advance past it. */
  requestEpochAdvance(identity: string, reason: string, options: { adopt?: boolean } = {}): Promise<EpochAdvanceRequested> {
    return requestEpochAdvance(this.parts, identity, reason, options);
  }

  listEpochRequests(): Promise<{ requests: EpochAdvancePending[]; unreadable: number }> {
    return listEpochRequests(this.parts);
  }

  readEpochRequest(id: string): Promise<EpochAdvancePending> {
    return readEpochRequest(this.parts, id);
  }

  approveEpochAdvance(identity: string, id: string, requestHash: string): Promise<EpochAdvanced> {
    return approveEpochAdvance(this.parts, identity, id, requestHash);
  }

  withdrawEpochRequest(identity: string, id: string, reason: string): Promise<Withdrawn> {
    return withdrawEpochRequest(this.parts, identity, id, reason);
  }

  /** Idempotent: stops watches and probes, flushes the spool, closes the high-water file and an owned client. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      clearInterval(this.#refreshTimer);
      await this.#restartWatch?.then((w) => w?.cancel()).catch(() => undefined);
      this.parts.hints.close();
      this.parts.etcd.close();
      await this.parts.failOpen.close().catch(() => undefined);
      await this.#highWater.close();
      if (this.#ownsClient) this.#client.close();
    })();
    return this.#closed;
  }
}
