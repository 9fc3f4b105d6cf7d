// The parts the lock operations share, assembled once by LockService.
import type { Logger } from '../core/logger.js';
import type { Classes } from './classes.js';
import type { EpochState } from './epoch.js';
import type { FailOpenGrants } from './failOpen.js';
import type { HintWatches } from './hints.js';
import type { LockKeys } from './kv.js';
import type { LockEtcd } from './lockEtcd.js';
import type { LockMetrics } from './lockMetrics.js';
import type { MarkerLease } from './markers.js';
import type { Sessions } from './sessions.js';
import type { Waiters } from './waiters.js';

/** What the lock service alarms on (platform/alarms.ts): a value it was about to act on and the API did not write. */
export interface LockAlarms {
  foreignWrite(facts: { what: string; key: string; revision: string; where: string }): void;
}

/** One act of a two-person request's life, as the audit log keeps it (sql/200). */
export interface TwoPersonAct {
  kind: 'force-release' | 'epoch-advance';
  action: 'requested' | 'approved' | 'rejected' | 'cancelled' | 'refused-unproven' | 'refused-changed' | 'refused-self' | 'refused-expired';
  requestId: string;
  requestHash: string;
  actor: string;
  requester: string;
  key: string;
  reason: string;
  /** etcd revision of the act, '0' where none. */
  revision: string;
}

/** Where the lock API records each two-person act (roles/ wires the audit store in); never throws. */
export interface TwoPersonLog {
  record(act: TwoPersonAct): Promise<void>;
}

export interface LockParts {
  cluster: string;
  keys: LockKeys;
  etcd: LockEtcd;
  epoch: EpochState;
  classes: Classes;
  sessions: Sessions;
  markers: MarkerLease;
  waiters: Waiters;
  hints: HintWatches;
  failOpen: FailOpenGrants;
  metrics: LockMetrics;
  logger: Logger;
  /** Fallback polling interval of a waiter when no hint arrives, ms (jittered). */
  pollMs: number;
  /** Key of the proof of origin the acquire txn writes into each hold. */
  originSecret: Buffer;
  /** Where refused forgeries are alarmed; absent in tests of the engine alone. */
  alarms?: LockAlarms;
  /** Where two-person acts are recorded; absent in tests of the engine alone. */
  twoPersonLog?: TwoPersonLog;
  /** Most pending two-person requests of one kind (force, epoch) at once, and of force requests for one lock. */
  pendingRequestLimits: { total: number; perKey: number };
}
