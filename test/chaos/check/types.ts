// What the chaos checker reads and what it says. A violation is data, not
// text: {kind, cluster, key, revision, era, expected, got}, so a verdict can
// be written as JSON, compared between runs and read by a program.
import type { FaultRecord } from '../faults.js';
import type { RecorderLine } from '../recorder.js';
import type { StoreDump } from '../storeDump.js';
import type { Truth } from '../workload.js';

export const VIOLATION_KINDS = [
  'lost', // a committed change in no row, no quarantine and no gap that may excuse it
  'forged-approved', // a two-person request edited by hand was carried out (its force record exists)
  'granted-while-sealed', // an API grant while /sys/epoch was one put by hand (before the two-person advance)
  'rolled-back-lost', // a change the tailer had captured before a restore, missing from the record after it
  'misrecorded', // the row at that (revision, key) holds another change
  'flip', // one (timeline, revision, key) written with different contents (a replay or a deposed leader)
  'phantom', // a row for a change etcd never committed in that era
  'misclassified', // a change read as something it was not
  'overlap', // two protected grants of one key in one timeline overlap
  'token-order', // a fencing token not above the key's previous one in its epoch
  'ghost-open-grant', // the log says held; etcd at the end holds no such grant
  'not-archived', // a genuine force record in no archive object
  'forged-archived', // a force record nobody approved, archived as genuine
  'archive-verify', // `lockaudit archive verify` failed
  'grants-export', // `lockaudit export grants` of the run refused: a grant row disagrees with the events it was derived from
  'restore-unrecorded', // a restore with no gap of its own naming it
  'gap-unexplained', // a gap no injected fault explains
  'gap-too-wide', // a gap wider than the fault that explains it allows
  'gap-shared', // one gap standing for two faults
] as const;
export type ViolationKind = (typeof VIOLATION_KINDS)[number];

export interface Violation {
  kind: ViolationKind;
  cluster: string;
  key: string;
  /** Decimal string; '' where the violation is not about one revision. */
  revision: string;
  /** The recorder's era (0, then +1 per restore); -1 where none applies. */
  era: number;
  expected: string;
  got: string;
}

export interface CheckInput {
  recording: RecorderLine[];
  truth: Truth[];
  store: StoreDump;
  /** Every fault the run injected, with the revisions it knows (faults.ts FaultFacts). */
  faults: FaultRecord[];
  /** The final revision everything was caught up to (the last era's). */
  finalRevision: bigint;
  /** Holds in etcd at finalRevision: key → create revision. */
  finalHolds: Map<string, string>;
  /** Texts of every object in the force archive. */
  archiveTexts: string[];
  archiveVerify: { ok: boolean; output: string };
  /** `lockaudit export grants` over the run's range, which checks every grant against its events (absent in older runs). */
  grantsExport?: { ok: boolean; output: string };
  /** The tailer's checkpoint reached finalRevision in time. */
  caughtUp: boolean;
  cluster?: string;
}

/** One gap of the store with the fault it was attributed to, the bound it was held to and what it excused. */
export interface GapLine {
  from: string;
  to: string;
  kind: string;
  width: string;
  fault: string;
  bound: string;
  excused: number;
  verdict: 'earned' | ViolationKind;
}

export interface CheckResult {
  status: 'clean' | 'violations' | 'invalid';
  /** Why the run proves nothing (exit 2): the checker was blind, or the run did not test what it says. */
  invalid: string[];
  changesChecked: number;
  captured: number;
  capturedRolledBack: number;
  quarantined: number;
  inGaps: number;
  /** Rows of a rolled-back era above what the recorder saw of it, up to the era's true end: counted, not verifiable. */
  unverifiableTail: number;
  /** Hand deletes read as expiries that were put, deleted and their lease revoked while no tailer ran (invariants.ts unwitnessable). */
  unwitnessable: number;
  phantoms: number;
  grantsChecked: number;
  forceRecords: number;
  /** Holds created by the API (not by the run's direct writes): how much the simulator really did. */
  apiGrants: number;
  /** Hand-put epochs whose sealed window (until the next /sys/epoch put of their era) was checked for API grants. */
  handEpochs: number;
  eras: number;
  gaps: GapLine[];
  violations: Violation[];
  byKind: Map<ViolationKind, number>;
}

export type StoreView = StoreDump;
