// Renderers for SIEMs: an OCSF-shaped JSON object (class API Activity-like
// "lock audit" events; unmapped lock fields under `unmapped`) and CEF, where
// the lock fields map onto simple extension keys. One line per event.
import type { AlertEvent } from './alertEvent.js';

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
};
const severity = (kind: string) => SEVERITY[kind] ?? { id: 1, name: 'Informational' };

const MESSAGE: Record<string, (e: AlertEvent) => string> = {
  grant: (e) => `${e.holder} was granted ${e.key}`,
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
  'waiver-expired': (e) => `the risk waiver of advisory class ${e.class} expired (${String(e.detail.waiverExpires ?? 'no waiver date')}; register ${String(e.detail.registerDate)})`,
  'waiver-expiring': (e) => `the risk waiver of advisory class ${e.class} expires ${String(e.detail.waiverExpires)} (${String(e.detail.daysLeft)} days left)`,
  gap: (e) => `audit history revisions ${String(e.detail.fromRevision)}..${String(e.detail.toRevision)} were lost: ${String(e.detail.reason)}`,
};

/** OCSF 1.x-shaped event (category Application Activity, a lockaudit class); the event id is metadata.uid. */
export function toOcsf(e: AlertEvent): Record<string, unknown> {
  const sev = severity(e.kind);
  return {
    metadata: { version: '1.3.0', uid: e.id, product: { name: 'lockaudit', vendor_name: 'lockaudit' }, labels: [e.kind] },
    category_uid: 6,
    category_name: 'Application Activity',
    class_uid: 6003,
    class_name: 'API Activity',
    activity_id: 99,
    activity_name: e.kind,
    type_uid: 600399,
    severity_id: sev.id,
    severity: sev.name,
    time: e.timeMs,
    message: (MESSAGE[e.kind] ?? ((x: AlertEvent) => `${x.kind} on ${x.key}`))(e),
    actor: e.holder ? { user: { name: e.holder, uid: e.holder } } : undefined,
    resources: e.key ? [{ name: e.key, type: 'lock', namespace: e.namespace || undefined }] : [],
    cloud: { provider: 'etcd', region: e.cluster },
    unmapped: { cluster: e.cluster, revision: e.revision, class: e.class, session: e.session, token: e.token, epoch: e.epoch, grant_revision: e.grantRevision, time_estimated: e.timeEstimated, ...e.detail },
  };
}

const cefHeader = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/[\r\n]+/g, ' ');
const cefValue = (v: string): string => v.replace(/\\/g, '\\\\').replace(/=/g, '\\=').replace(/\r?\n/g, '\\n');

/** CEF:0 line; the lock fields map onto standard keys (suser, cs1..cs4, cn1). */
export function toCef(e: AlertEvent): string {
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
    ['cs4Label', 'token'],
    ['cs4', e.token],
    ['cn1Label', 'revision'],
    ['cn1', e.revision],
  ];
  const extension = ext.filter(([, v]) => v !== '').map(([k, v]) => `${k}=${cefValue(v)}`).join(' ');
  return `CEF:0|lockaudit|lockaudit|1|${cefHeader(e.kind)}|${cefHeader(e.kind)}|${Math.min(10, sev.id * 2 + 1)}|${extension}`;
}
