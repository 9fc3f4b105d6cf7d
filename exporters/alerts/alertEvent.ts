// The event an alert sink delivers: one audit event, gap or unprotected
// grant, with an id that is the same every time it is delivered (receivers
// drop duplicates by it: delivery is at least once).
import type { AuditEventRow } from '../../core/events.js';
import { CANARY_NAMESPACE, parseLockName, PREFIX } from '../../core/keyspace.js';
import type { TwoPersonLogRow } from '../../core/twoPersonLogRow.js';

export interface AlertEvent {
  /**
   * Stable: `<cluster>:<revision>:<key>` (first etcd timeline), `<cluster>:t<timeline>:<revision>:<key>` (a
   * timeline after a restore, which reuses revision numbers), `<cluster>:gap:<from>` (a compaction gap of the
   * first timeline), `<cluster>:gap:<from>:<kind>:<generation>` (any other gap), `<cluster>:spool:<key>`,
   * `register:<runId>:<class>`, `<cluster>:two-person:<row hash>`.
   */
  id: string;
  cluster: string;
  kind: string;
  /** Decimal; '0' for unprotected grants (they have no revision). */
  revision: string;
  /** The lock name for holds and queues, else the etcd key ('' for gaps). */
  key: string;
  namespace: string;
  class: string;
  holder: string;
  session: string;
  /** Decimal string: tokens exceed 2^53. */
  token: string;
  epoch: number;
  grantRevision: string;
  timeMs: number;
  timeEstimated: boolean;
  detail: Record<string, unknown>;
}

/** The platform canary's own grant (roles/canary/): the lock API's (proven), in its namespace: alert kind `canary`. */
const canaryGrant = (r: Pick<LogRow, 'event_type' | 'namespace' | 'origin'>): boolean =>
  r.event_type === 'grant' && r.origin !== 'foreign' && r.namespace === CANARY_NAMESPACE;

export interface LogRow {
  revision: string;
  key: string;
  event_type: string;
  namespace: string;
  class: string;
  holder: string;
  session: string;
  token: string;
  epoch: number | string;
  grant_revision: string;
  wall_ms: number | string;
  time_estimated: number | string;
  value: string;
  gap_to: string;
  reason: string;
  /** 'api' or 'foreign' (a hold written around the lock API); 'api' for rows not about a hold. */
  origin?: string;
  /** The etcd timeline the row was captured in (sql/065); 0 for gaps. */
  timeline?: number | string;
  /** A gap's identity (sql/090: '<kind>:<generation>', '' before it); '' for events. */
  identity?: string;
}

/** An unprotected grant's spooled event (unprotected.sql): its lock columns are the events table's. */
export interface SpoolRow extends Pick<AuditEventRow, 'key' | 'namespace' | 'lock_path' | 'class' | 'holder' | 'session'> {
  wall_ms: number | string;
  ingested_ms: number | string;
  value: string;
}

const lockName = (key: string): string => (key.startsWith(PREFIX.hold) ? key.slice(PREFIX.hold.length) : key);

function parseObject(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function fromLogRow(cluster: string, r: LogRow): AlertEvent {
  const revision = String(r.revision);
  if (r.event_type === 'gap') {
    const identity = r.identity ?? '';
    const [gapKind = 'compaction', generation = '0'] = identity === '' ? [] : identity.split(':');
    // The first timeline's compaction gaps keep the id they always had; a restore gap may start where one did.
    const first = gapKind === 'compaction' && generation === '0';
    return {
      id: first ? `${cluster}:gap:${revision}` : `${cluster}:gap:${revision}:${identity}`,
      cluster,
      kind: 'gap',
      revision,
      key: '',
      namespace: '',
      class: '',
      holder: '',
      session: '',
      token: '0',
      epoch: 0,
      grantRevision: '0',
      timeMs: Number(r.wall_ms),
      timeEstimated: false,
      detail: { fromRevision: revision, toRevision: String(r.gap_to), reason: r.reason, gapKind, generation: Number(generation) },
    };
  }
  const detail: Record<string, unknown> = {};
  const timeline = Number(r.timeline ?? 0);
  if (timeline > 0) detail.timeline = timeline;
  if (r.event_type === 'class-change') detail.definition = r.value ? parseObject(r.value) : null;
  if (r.event_type === 'epoch-advance') detail.epoch = Number(r.epoch);
  const foreign = r.origin === 'foreign';
  if (foreign) detail.origin = 'foreign';
  // A foreign hold seen only in a gap or restore snapshot: a foreign grant whose put no tailer watched (at the snapshot's revision).
  const seenInSnapshot = foreign && r.event_type === 'snapshot-hold';
  if (seenInSnapshot) detail.seenIn = 'snapshot';
  return {
    id: timeline > 0 ? `${cluster}:t${timeline}:${revision}:${r.key}` : `${cluster}:${revision}:${r.key}`,
    cluster,
    // A grant that bypassed the lock API is its own kind, so a rule can stream exactly those (rules.ts: 'grant' still matches it).
    kind: (foreign && r.event_type === 'grant') || seenInSnapshot ? 'foreign-grant' : canaryGrant(r) ? 'canary' : r.event_type,
    revision,
    key: lockName(r.key),
    namespace: r.namespace,
    class: r.class,
    holder: r.holder,
    session: r.session,
    token: String(r.token),
    epoch: Number(r.epoch),
    grantRevision: String(r.grant_revision),
    timeMs: Number(r.wall_ms),
    timeEstimated: Number(r.time_estimated) === 1,
    detail,
  };
}

export function fromSpoolRow(cluster: string, r: SpoolRow): AlertEvent {
  const key = r.lock_path ? `${r.namespace}/${r.lock_path}` : '';
  return {
    id: `${cluster}:spool:${r.key}`,
    cluster,
    kind: 'unprotected-grant',
    revision: '0',
    key,
    namespace: r.namespace,
    class: r.class,
    holder: r.holder,
    session: r.session,
    token: '0',
    epoch: 0,
    grantRevision: '0',
    timeMs: Number(r.wall_ms),
    timeEstimated: false,
    detail: { spoolId: r.key },
  };
}

/** A row of a stored risk-register run whose waiver is expired or expiring. */
export interface RegisterClassRow {
  class: string;
  namespace: string;
  risk_owner: string;
  waiver_day: string | null;
  days_left: number | string | null;
  status: string;
}

export interface RegisterRunRow {
  run_id: string;
  register_day: string;
  as_of_ms: number | string;
}

/** One event per class per register run: the id names both, so a re-delivered run carries the same ids. Not about one cluster: cluster ''. */
export function fromRegisterRow(run: RegisterRunRow, r: RegisterClassRow): AlertEvent {
  return {
    id: `register:${run.run_id}:${r.class}`,
    cluster: '',
    kind: r.status === 'expired' ? 'waiver-expired' : 'waiver-expiring',
    revision: '0',
    key: '',
    namespace: r.namespace,
    class: r.class,
    holder: '',
    session: '',
    token: '0',
    epoch: 0,
    grantRevision: '0',
    timeMs: Number(run.as_of_ms),
    timeEstimated: false,
    detail: {
      runId: run.run_id,
      registerDate: run.register_day,
      riskOwner: r.risk_owner,
      waiverExpires: r.waiver_day,
      daysLeft: r.days_left === null ? null : Number(r.days_left),
      status: r.status,
    },
  };
}

/** A row of a cluster's two-person log as twoPersonPending.sql reads it: with the hash that names it, without its cluster. */
export interface TwoPersonRow extends Omit<TwoPersonLogRow, 'cluster'> {
  row_id: string;
  detail: string;
}

/**
 * One act of a two-person request: kind `two-person-refused` for an approval the API refused (edited or hand-written,
 * changed since its approver read it, by its own requester, expired), else `two-person`. The actor is who acted, not a
 * holder; the lock is the one a force-release names ('' for an epoch advance).
 */
export function fromTwoPersonRow(cluster: string, r: TwoPersonRow): AlertEvent {
  return {
    id: `${cluster}:two-person:${r.row_id}`,
    cluster,
    kind: r.action.startsWith('refused-') ? 'two-person-refused' : 'two-person',
    revision: String(r.revision),
    key: r.key,
    namespace: parseLockName(r.key)?.namespace ?? '',
    class: '',
    holder: '',
    session: '',
    token: '0',
    epoch: 0,
    grantRevision: '0',
    timeMs: Number(r.at_ms),
    timeEstimated: false,
    detail: {
      request: r.kind,
      action: r.action,
      requestId: r.request_id,
      requestHash: r.request_hash,
      actor: r.actor,
      requester: r.requester,
      reason: r.reason,
      ...(r.detail ? { note: r.detail } : {}),
    },
  };
}
