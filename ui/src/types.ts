// Response shapes of the public API (reports/*/index.ts, api/routes/tailers.ts).
export interface Grant {
  cluster: string;
  key: string;
  grantRevision: string;
  token: string;
  holder: string;
  class: string;
  namespace: string;
  grantedAt: string;
  endedAt: string | null;
  endKind: string | null;
  endRevision: string | null;
  waitMs: number;
  durationMs: number | null;
  unprotected: boolean;
}
export interface GrantPage {
  items: Grant[];
  nextCursor: string | null;
}
type Pct<K extends string> = Record<K, number | null>;
export interface ContentionGroup {
  group: string;
  grants: number;
  distinctHolders: number;
  waitMs: Pct<'p50' | 'p95' | 'p99'>;
  holdMs: Pct<'p50' | 'p99'>;
  handoffGapMs: Pct<'p50' | 'p95'>;
  handoffs: number;
  expiries: number;
  expiryRatio: number;
  forceReleases: number;
}
export interface HotKey {
  key: string;
  grants: number;
  distinctHolders: number;
  waitP95Ms: number;
  expiries: number;
  forceReleases: number;
}
export interface Contention {
  from: string;
  to: string;
  by: string;
  groups: ContentionGroup[];
  hottestKeys: HotKey[];
  bucketSeconds: number;
  series: { at: string; grants: number; waitP95Ms: number; waitMs: Pct<'p50' | 'p95' | 'p99'>; holdMs: Pct<'p50' | 'p99'>; expiries: number; forceReleases: number }[];
}
export interface RegisterRow {
  class: string;
  namespace: string;
  riskOwner: string;
  waiverExpires: string | null;
  daysLeft: number | null;
  status: 'ok' | 'expiring' | 'expired';
  grants24h: number;
  grants30d: number;
  distinctKeys24h: number;
  distinctKeys30d: number;
  expiries24h: number;
  expiries30d: number;
  forceReleases24h: number;
  forceReleases30d: number;
  unprotected24h: number;
  unprotected30d: number;
}
export interface Register {
  runId: string;
  date: string;
  asOf: string;
  trigger: 'schedule' | 'manual';
  requestedBy: string;
  classes: RegisterRow[];
}
export interface Reconciliation {
  id: string;
  note: string;
  reconciledBy: string;
  reconciledAt: string;
  notes: number;
}
export interface UnprotectedItem {
  id: string;
  cluster: string;
  key: string;
  holder: string;
  class: string;
  namespace: string;
  spoolId: string;
  grantedAt: string;
  endedAt: string | null;
  durationMs: number | null;
  overlapping: Grant[];
  reconciliation: Reconciliation | null;
}
export interface UnprotectedReport {
  from: string;
  to: string;
  items: UnprotectedItem[];
  truncated: boolean;
}
export interface Tailer {
  cluster: string;
  clusterId: string | null;
  leader: string | null;
  checkpoint: string;
  headRevision: string | null;
  lagRevisions: string | null;
  lagSeconds: number | null;
  compactRevision: string | null;
  statusAt: string | null;
  gaps: number;
}
export interface Gap {
  cluster: string;
  fromRevision: string;
  toRevision: string;
  detectedAt: string;
  reason: string;
}
export interface TimelineCell {
  key: string;
  at: string;
  grants: number;
  holders: number;
  topHolder: string;
  heldMs: number;
  expiries: number;
  forceReleases: number;
  unprotected: number;
}
export interface TimelineGap {
  cluster: string;
  fromRevision: string;
  toRevision: string;
  reason: string;
  detectedAt: string;
  fromTime: string | null;
  toTime: string | null;
}
export interface Timeline {
  from: string;
  to: string;
  mode: 'grants' | 'buckets';
  lanes: string[];
  totalLanes: number;
  totalGrants: number;
  bucketSeconds: number | null;
  grants: Grant[];
  cells: TimelineCell[];
  gaps: TimelineGap[];
}
export interface LagPoint {
  at: string;
  lagSecondsMax: number | null;
  lagRevisionsMax: string | null;
  checkpoint: string | null;
  samples: number;
}
export interface TailerLag {
  from: string;
  to: string;
  bucketSeconds: number;
  clusters: { cluster: string; series: LagPoint[] }[];
}
export interface Whoami {
  identity: string;
  roles: string[];
  tokenId: string;
}
// GET /v1/state and GET /v1/diff (reports/state, reports/diff).
export interface HeldLock {
  key: string;
  holder: string;
  session: string;
  token: string;
  class: string;
  epoch: number;
  grantRevision: string;
  since: string;
  startKnown: boolean;
}
export interface GapRef {
  fromRevision: string;
  toRevision: string;
  reason: string;
}
export interface UnknownKey {
  key: string;
  kind: 'hold' | 'queue' | 'class';
  reason: string;
  gap: GapRef | null;
  lastKnownRevision: string | null;
  lastKnownHolder: string | null;
}
export interface Moment {
  requested: string;
  revision: string;
  capturedThrough: string;
}
export interface KeyspaceState {
  cluster: string;
  at: Moment;
  holds: HeldLock[];
  queue: { key: string; leaseId: string; holder: string; class: string; since: string; sinceRevision: string }[];
  classes: { name: string; revision: string; definition: Record<string, unknown> }[];
  epoch: { epoch: number; revision: string } | null;
  unknown: UnknownKey[];
  gaps: GapRef[];
  complete: boolean;
  truncated: boolean;
}
export interface KeyspaceDiff {
  cluster: string;
  from: Moment;
  to: Moment;
  holds: {
    appeared: HeldLock[];
    ended: (HeldLock & { endKind: string; endRevision: string | null; endedAt: string | null; endedBy: string | null })[];
    changedHolder: { key: string; before: { holder: string; grantRevision: string }; after: { holder: string; grantRevision: string } }[];
  };
  classes: {
    created: { name: string; revision: string }[];
    changed: { name: string; revision: string; fields: { field: string; before: unknown; after: unknown }[] }[];
    deleted: { name: string; revision: string }[];
  };
  epochAdvances: { revision: string; epoch: number; by: string | null }[];
  forceReleases: { revision: string; key: string; holder: string; requester: string; approver: string; reason: string }[];
  gaps: GapRef[];
  complete: boolean;
  truncated: boolean;
}
