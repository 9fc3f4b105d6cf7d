// Renderers for SIEMs: OCSF 1.8 JSON (a class per kind, argued at KINDS; the
// lock fields under `unmapped`; validated by test/unit/ocsf.test.ts against
// what the published schema requires) and CEF, where the lock fields map onto
// simple extension keys. One line per event.
import { PREFIX } from '../../core/keyspace.js';
import { hashToken } from '../../core/tokenHash.js';
import type { AlertEvent } from './alertEvent.js';

/**
 * An alert event as it leaves for a sink: the fencing token replaced by its keyed hash (core/tokenHash.ts). A
 * SIEM is a log, and a token in a log is a token anyone who reads it can present.
 */
export type SinkEvent = Omit<AlertEvent, 'token'> & { tokenHash: string };

export function forSink(e: AlertEvent, tokenKey: Buffer): SinkEvent {
  const { token, ...rest } = e;
  return { ...rest, tokenHash: hashToken(tokenKey, token) };
}

const SEVERITY: Record<string, { id: number; name: string }> = {
  'force-release': { id: 4, name: 'High' },
  gap: { id: 4, name: 'High' },
  'unprotected-grant': { id: 3, name: 'Medium' },
  expiry: { id: 3, name: 'Medium' },
  'epoch-advance': { id: 4, name: 'High' },
  'epoch-release': { id: 3, name: 'Medium' },
  deleted: { id: 3, name: 'Medium' },
  'foreign-grant': { id: 4, name: 'High' },
  'waiver-expired': { id: 4, name: 'High' },
  'waiver-expiring': { id: 2, name: 'Low' },
  'class-change': { id: 2, name: 'Low' },
  'two-person': { id: 3, name: 'Medium' },
  'two-person-refused': { id: 4, name: 'High' },
};
const severity = (kind: string) => SEVERITY[kind] ?? { id: 1, name: 'Informational' };

const MESSAGE: Record<string, (e: SinkEvent) => string> = {
  grant: (e) => `${e.holder} was granted ${e.key}`,
  canary: (e) => `the platform canary was granted ${e.key} (the audit path's heartbeat: docs/operations.md#the-canary)`,
  release: (e) => `${e.holder} released ${e.key}`,
  expiry: (e) => `the hold of ${e.holder} on ${e.key} expired (lease lapsed)`,
  'force-release': (e) => `the hold of ${e.holder} on ${e.key} was force-released`,
  'session-close': (e) => `the session of ${e.holder} closed, ending its hold on ${e.key}`,
  'epoch-release': (e) => `a restored hold on ${e.key} was removed by an epoch advance`,
  'epoch-advance': (e) => `the epoch advanced to ${e.epoch}`,
  'class-change': (e) => `lock class ${e.class} was ${e.detail.definition ? 'defined or changed' : 'deleted'}`,
  'unprotected-grant': (e) => `${e.holder} was granted ${e.key} without quorum (unprotected, token 0)`,
  deleted: (e) => `the hold of ${e.holder} on ${e.key} was deleted by hand while its lease lived (not through the lock API)`,
  'foreign-grant': (e) => `${e.holder} was granted ${e.key} by a write around the lock API (no proof of origin)`,
  'waiver-expired': (e) =>
    `the risk waiver of advisory class ${e.class} expired (${String(e.detail.waiverExpires ?? 'no waiver date')}; register ${String(e.detail.registerDate)})`,
  'waiver-expiring': (e) => `the risk waiver of advisory class ${e.class} expires ${String(e.detail.waiverExpires)} (${String(e.detail.daysLeft)} days left)`,
  'two-person': (e) => `${String(e.detail.actor)} ${String(e.detail.action)} ${twoPersonWhat(e)}`,
  'two-person-refused': (e) =>
    `the approval by ${String(e.detail.actor)} of ${twoPersonWhat(e)} was refused (${String(e.detail.action).slice('refused-'.length)})`,
  gap: (e) => `audit history revisions ${String(e.detail.fromRevision)}..${String(e.detail.toRevision)} were lost: ${String(e.detail.reason)}`,
};

/** "the force-release request <id> of <lock> by <requester>", or the epoch advance's. */
function twoPersonWhat(e: SinkEvent): string {
  const what = e.detail.request === 'epoch-advance' ? 'epoch-advance request' : `force-release request of ${e.key}`;
  return `the ${what} ${String(e.detail.requestId)} by ${String(e.detail.requester) || 'an unknown requester'}`;
}

/** The OCSF schema version the events follow: test/unit/fixtures/ocsf-required-<version>.json holds what it requires. */
export const OCSF_VERSION = '1.8.0';

type OcsfClass = 'api_activity' | 'datastore_activity' | 'entity_management' | 'event_log_activity' | 'compliance_finding';

const CLASSES: Record<OcsfClass, { uid: number; name: string; categoryUid: number; categoryName: string }> = {
  api_activity: { uid: 6003, name: 'API Activity', categoryUid: 6, categoryName: 'Application Activity' },
  datastore_activity: { uid: 6005, name: 'Datastore Activity', categoryUid: 6, categoryName: 'Application Activity' },
  entity_management: { uid: 3004, name: 'Entity Management', categoryUid: 3, categoryName: 'Identity & Access Management' },
  event_log_activity: { uid: 1008, name: 'Event Log Activity', categoryUid: 1, categoryName: 'System Activity' },
  compliance_finding: { uid: 2003, name: 'Compliance Finding', categoryUid: 2, categoryName: 'Findings' },
};

/**
 * The OCSF class and activity of each alert kind. The rule: who made the change.
 * - A caller of the lock API acting on its own hold (grant, unprotected grant,
 *   release, session close) → API Activity: the holder is the actor, the call
 *   an API operation (`api.operation` names the route).
 * - An operator acting on something the platform manages (force-release and
 *   the holds an epoch advance removes — both two-person operations on a hold;
 *   the epoch itself; a lock class) → Entity Management: the hold, epoch or
 *   class is the managed `entity`. The operators' names are in the force record
 *   and epoch advance (archived, hash-chained), not in this event, so the class
 *   that does not require an actor is the honest one.
 * - A change etcd made itself or someone made in etcd around the API (lease
 *   expiry, a hold deleted by hand, a grant with no proof of origin) → Datastore
 *   Activity on the etcd cluster (`database`): no API call happened.
 * - History lost to compaction or a restore → Event Log Activity, Delete: our
 *   audit log lost revisions.
 * - An act of a two-person request (requested, approved, rejected, cancelled,
 *   or an approval refused) → API Activity: an operator called the lock API;
 *   the operator is the actor (not a holder), the request the resource.
 * - An advisory class's waiver expired or expiring → Compliance Finding: a
 *   control (the risk waiver) is in Warning or Fail, found by the nightly register.
 */
const KINDS: Record<string, { cls: OcsfClass; activityId: number; activity: string; operation?: string }> = {
  grant: { cls: 'api_activity', activityId: 1, activity: 'Create', operation: 'POST /v1/locks/acquire' },
  // The canary acquires through the lock engine as a caller would: the same class of event, its own kind.
  canary: { cls: 'api_activity', activityId: 1, activity: 'Create', operation: 'POST /v1/locks/acquire' },
  'unprotected-grant': { cls: 'api_activity', activityId: 1, activity: 'Create', operation: 'POST /v1/locks/acquire' },
  release: { cls: 'api_activity', activityId: 4, activity: 'Delete', operation: 'POST /v1/locks/release' },
  'session-close': { cls: 'api_activity', activityId: 4, activity: 'Delete', operation: 'DELETE /v1/sessions/:id' },
  'force-release': { cls: 'entity_management', activityId: 4, activity: 'Delete' },
  'epoch-release': { cls: 'entity_management', activityId: 4, activity: 'Delete' },
  'epoch-advance': { cls: 'entity_management', activityId: 3, activity: 'Update' },
  'class-change': { cls: 'entity_management', activityId: 3, activity: 'Update' },
  expiry: { cls: 'datastore_activity', activityId: 7, activity: 'Delete' },
  deleted: { cls: 'datastore_activity', activityId: 7, activity: 'Delete' },
  'foreign-grant': { cls: 'datastore_activity', activityId: 6, activity: 'Create' },
  gap: { cls: 'event_log_activity', activityId: 2, activity: 'Delete' },
  'waiver-expired': { cls: 'compliance_finding', activityId: 1, activity: 'Create' },
  'waiver-expiring': { cls: 'compliance_finding', activityId: 1, activity: 'Create' },
  // The activity follows the action (twoPersonActivity); these are the defaults for the test's one example.
  'two-person': { cls: 'api_activity', activityId: 1, activity: 'Create' },
  'two-person-refused': { cls: 'api_activity', activityId: 3, activity: 'Update' },
};

/** A two-person act's API Activity: the route the operator called and what it did to the request. */
function twoPersonActivity(e: SinkEvent): { cls: OcsfClass; activityId: number; activity: string; operation: string } {
  const base = e.detail.request === 'epoch-advance' ? '/v1/epoch/advance' : '/v1/force-releases';
  const action = String(e.detail.action);
  if (action === 'requested') return { cls: 'api_activity', activityId: 1, activity: 'Create', operation: `POST ${base}` };
  if (action === 'rejected' || action === 'cancelled') return { cls: 'api_activity', activityId: 4, activity: 'Delete', operation: `POST ${base}/:id/reject` };
  return { cls: 'api_activity', activityId: 3, activity: 'Update', operation: `POST ${base}/:id/approve` };
}
const isTwoPerson = (e: SinkEvent): boolean => e.kind === 'two-person' || e.kind === 'two-person-refused';
/** Every kind an alert can carry (the config's rule kinds): the OCSF test renders each. */
export const OCSF_KINDS: readonly string[] = Object.keys(KINDS);

const FALLBACK: { cls: OcsfClass; activityId: number; activity: string; operation?: string } = { cls: 'entity_management', activityId: 99, activity: 'Other' };

const DATABASE_OTHER = 99; // database.type_id: etcd is a key-value store, which OCSF does not list

type Json = Record<string, unknown>;
const compact = (o: Json): Json => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== ''));

/** OCSF 1.8 event: the class per kind (KINDS), the lock fields under `unmapped`; the event id is metadata.uid. */
export function toOcsf(e: SinkEvent): Json {
  const sev = severity(e.kind);
  const k = isTwoPerson(e) ? twoPersonActivity(e) : (KINDS[e.kind] ?? FALLBACK);
  const cls = CLASSES[k.cls];
  const message = (MESSAGE[e.kind] ?? ((x: SinkEvent) => `${x.kind} on ${x.key}`))(e);
  const holder = e.holder ? compact({ name: e.holder, uid: e.holder }) : undefined;
  const operator = isTwoPerson(e) && e.detail.actor ? compact({ name: String(e.detail.actor), uid: String(e.detail.actor) }) : undefined;
  // The lock: a resource owned by its holder (the class, for waiver findings).
  const lockResource = e.key
    ? compact({ uid: e.key, name: e.key, type: 'lock', namespace: e.namespace, owner: holder, group: e.class ? { name: e.class } : undefined })
    : undefined;
  const classResource = !e.key && e.class ? compact({ uid: `class:${e.class}`, name: e.class, type: 'lock class', namespace: e.namespace }) : undefined;
  // A two-person act is about its request (the lock it names, if any, is the request's group).
  const requestResource = isTwoPerson(e)
    ? compact({
        uid: `${String(e.detail.request)}:${String(e.detail.requestId)}`,
        name: String(e.detail.requestId),
        type: `${String(e.detail.request)} request`,
        group: e.key ? { name: e.key } : undefined,
      })
    : undefined;
  const resource = requestResource ?? lockResource ?? classResource;
  const failed = e.kind === 'gap' || e.kind === 'two-person-refused';
  const base: Json = {
    metadata: compact({
      version: OCSF_VERSION,
      uid: e.id,
      product: { name: 'lockaudit', vendor_name: 'lockaudit' },
      labels: [e.kind],
      log_name: e.kind === 'gap' ? 'gaps' : e.kind.startsWith('waiver-') ? 'risk register' : 'events',
    }),
    category_uid: cls.categoryUid,
    category_name: cls.categoryName,
    class_uid: cls.uid,
    class_name: cls.name,
    activity_id: k.activityId,
    activity_name: k.activity,
    type_uid: cls.uid * 100 + k.activityId,
    type_name: `${cls.name}: ${k.activity}`,
    severity_id: sev.id,
    severity: sev.name,
    time: e.timeMs,
    message,
    // The change was committed (a gap: the revisions were not captured).
    status_id: failed ? 2 : 1,
    status: failed ? 'Failure' : 'Success',
    status_detail: statusDetail(e),
    unmapped: compact({
      kind: e.kind,
      cluster: e.cluster,
      revision: e.revision,
      key: e.key,
      class: e.class,
      holder: e.holder,
      session: e.session,
      token_hash: e.tokenHash,
      epoch: e.epoch,
      grant_revision: e.grantRevision,
      time_estimated: e.timeEstimated,
      ...e.detail,
    }),
  };
  const { attributes, keyAt, holderAt } = classAttributes(k.cls, k.operation, e, operator ?? holder, resource);
  // Observables: the lock (or class, or request) as a Resource UID, the holder (or operator) as a User Name, each named by where the event carries it.
  const resourceUid = requestResource ? String(requestResource.uid) : e.key || (classResource ? String(classResource.uid) : '');
  const userName = operator ? String(operator.name) : e.holder;
  const observables = [
    ...(resourceUid ? [{ name: keyAt, type_id: 10, type: 'Resource UID', value: resourceUid }] : []),
    ...(requestResource && e.key ? [{ name: 'resources.group.name', type_id: 10, type: 'Resource UID', value: e.key }] : []),
    ...(userName ? [{ name: operator ? 'actor.user.name' : holderAt, type_id: 4, type: 'User Name', value: userName }] : []),
  ];
  return compact({ ...base, observables: observables.length > 0 ? observables : undefined, ...attributes });
}

function statusDetail(e: SinkEvent): string | undefined {
  if (e.kind === 'unprotected-grant') return 'granted without quorum: token 0, not fenced (unprotected)';
  if (e.kind === 'foreign-grant') return 'no proof of origin: written around the lock API';
  if (e.kind === 'deleted') return 'deleted with no marker while its lease lived';
  if (e.kind === 'gap') return `revisions not captured: ${String(e.detail.reason ?? '')}`;
  if (e.kind === 'two-person-refused') return `approval refused: ${String(e.detail.action).slice('refused-'.length)}`;
  return undefined;
}

/** The attributes the class requires (and recommends, where the event has them). */
function classAttributes(
  cls: OcsfClass,
  operation: string | undefined,
  e: SinkEvent,
  holder: Json | undefined,
  resource: Json | undefined,
): { attributes: Json; keyAt: string; holderAt: string } {
  const inResources = { keyAt: 'resources.uid', holderAt: 'resources.owner.name' };
  const etcd = compact({ name: 'etcd', uid: e.cluster, type_id: DATABASE_OTHER, type: 'etcd key-value store' });
  switch (cls) {
    case 'api_activity':
      return {
        ...inResources,
        attributes: {
          // The holder called the API for its own hold (an operator, for a
          // two-person act). The log has no client address: the source
          // endpoint is the caller's session (an etcd lease), else the cluster.
          actor: compact({ user: holder ?? { name: 'unknown' }, app_name: 'lockaudit lock API' }),
          api: compact({ operation: operation ?? e.kind, service: { name: 'lockaudit lock API' } }),
          src_endpoint: compact({
            uid: e.session ? `lease:${e.session}` : `cluster:${e.cluster}`,
            name: typeof holder?.name === 'string' ? holder.name : undefined,
          }),
          resources: resource ? [resource] : undefined,
        },
      };
    case 'datastore_activity':
      // The class has no resources: the lock and its holder stay under unmapped.
      return {
        keyAt: 'unmapped.key',
        holderAt: 'unmapped.holder',
        attributes: {
          // Nobody called the API: etcd's lessor (expiry) or a client of etcd
          // itself (hand delete, foreign grant). etcd records no client address:
          // the source is the cluster the change was committed on.
          actor: { app_name: e.kind === 'expiry' ? 'etcd (lease expiry)' : 'etcd client outside the lock API' },
          src_endpoint: { svc_name: 'etcd', uid: `cluster:${e.cluster}` },
          database: etcd,
          type_id: 1,
          type: 'Database',
        },
      };
    case 'entity_management':
      return {
        keyAt: e.kind === 'class-change' ? 'entity.uid' : 'entity.name',
        holderAt: 'entity.user.name',
        attributes: { entity: managedEntity(e, holder) },
      };
    case 'event_log_activity':
      return {
        ...inResources,
        attributes: {
          log_name: 'lockaudit events',
          log_provider: 'lockaudit tailer',
          log_type: 'audit',
          log_type_id: 2,
          src_endpoint: { svc_name: 'etcd', uid: `cluster:${e.cluster}` },
        },
      };
    case 'compliance_finding':
      return {
        ...inResources,
        attributes: {
          finding_info: { uid: e.id, title: (MESSAGE[e.kind] ?? (() => e.kind))(e), types: ['advisory lock class risk waiver'] },
          compliance: compact({
            control: 'advisory lock class: risk owner and unexpired waiver',
            standards: ['lockaudit advisory risk register'],
            status_id: e.kind === 'waiver-expired' ? 3 : 2,
            status: e.kind === 'waiver-expired' ? 'Fail' : 'Warning',
            status_detail: `waiver ${String(e.detail.waiverExpires ?? 'none')}; risk owner ${String(e.detail.riskOwner ?? 'none')}`,
          }),
          resources: resource ? [resource] : undefined,
          // A finding's own status: New (each register run reports it afresh).
          status_id: 1,
          status: 'New',
        },
      };
  }
}

function managedEntity(e: SinkEvent, holder: Json | undefined): Json {
  // uid: the class's etcd key (/sys/class/<name>), as the observable names it.
  if (e.kind === 'class-change')
    return compact({
      uid: e.key || `class:${e.class}`,
      name: e.class,
      type: 'lock class',
      data: (e.detail.definition as Json | null | undefined) ?? undefined,
    });
  if (e.kind === 'epoch-advance') return { uid: `epoch:${e.cluster}`, name: PREFIX.epoch, type: 'epoch', version: String(e.epoch) };
  // A hold: its lock name and the grant's token hash as its uid ('0': unfenced), its holder.
  return compact({ uid: `${e.key}@${e.tokenHash || '0'}`, name: e.key || e.kind, type: 'lock hold', user: holder });
}

const cefHeader = (v: string): string =>
  v
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/[\r\n]+/g, ' ');
const cefValue = (v: string): string => v.replace(/\\/g, '\\\\').replace(/=/g, '\\=').replace(/\r?\n/g, '\\n');

/** CEF:0 line; the lock fields map onto standard keys (suser, cs1..cs4, cn1). */
export function toCef(e: SinkEvent): string {
  const sev = severity(e.kind);
  const ext: Array<[string, string]> = [
    ['rt', String(e.timeMs)],
    ['externalId', e.id],
    ['msg', (MESSAGE[e.kind] ?? (() => e.kind))(e)],
    ['suser', e.holder],
    ['cs1Label', 'lock'],
    ['cs1', e.key],
    ['cs2Label', 'class'],
    ['cs2', e.class],
    ['cs3Label', 'cluster'],
    ['cs3', e.cluster],
    ['cs4Label', 'tokenHash'],
    ['cs4', e.tokenHash],
    ['cn1Label', 'revision'],
    ['cn1', e.revision],
  ];
  const extension = ext
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `${k}=${cefValue(v)}`)
    .join(' ');
  return `CEF:0|lockaudit|lockaudit|1|${cefHeader(e.kind)}|${cefHeader(e.kind)}|${Math.min(10, sev.id * 2 + 1)}|${extension}`;
}
