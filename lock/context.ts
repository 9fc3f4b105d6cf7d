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
}
