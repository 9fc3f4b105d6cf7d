// Hand-built rows for the `grants` and `events` tables (report tests and
// benchmarks): the tailer's shapes, with only what a test cares about given.
import type { AuditEventRow } from '../../core/events.js';
import { makeToken } from '../../core/token.js';
import type { GrantRow } from '../../tailer/types.js';

export interface GrantSpec {
  cluster?: string;
  key: string; // <namespace>/<path>
  class: string;
  holder: string;
  rev: number; // grant revision; 0 with spool for unprotected grants
  at: number; // granted_at, ms
  waitMs?: number;
  end?: { kind: 'release' | 'expiry' | 'force' | 'session-close' | 'deleted'; at: number; rev: number };
  spool?: string; // unprotected when set
  epoch?: number;
  origin?: 'api' | 'foreign'; // foreign: put straight into etcd (default api)
}

export function tokenOf(spec: GrantSpec): string {
  return spec.spool ? '0' : makeToken(spec.epoch ?? 40, BigInt(spec.rev)).toString();
}

/** The open row and, when ended, the closed row of one grant. */
export function grantRows(spec: GrantSpec): { open: GrantRow; closed?: GrantRow } {
  const slash = spec.key.indexOf('/');
  const open: GrantRow = {
    cluster: spec.cluster ?? 'c1',
    key: spec.key,
    namespace: spec.key.slice(0, slash),
    lock_path: spec.key.slice(slash + 1),
    class: spec.class,
    holder: spec.holder,
    session: '7587862',
    token: tokenOf(spec),
    epoch: spec.epoch ?? 40,
    grant_revision: spec.spool ? '0' : String(spec.rev),
    spool_id: spec.spool ?? '',
    granted_at: spec.at,
    wait_ms: spec.waitMs ?? 0,
    end_kind: '',
    end_revision: '0',
    ended_at: null,
    ended_at_error_ms: 0,
    duration_ms: null,
    unprotected: spec.spool ? 1 : 0,
    start_known: 1,
    row_version: '0',
    ...(spec.origin ? { origin: spec.origin } : {}),
  };
  if (!spec.end) return { open };
  return {
    open,
    closed: {
      ...open,
      end_kind: spec.end.kind,
      end_revision: String(spec.end.rev),
      ended_at: spec.end.at,
      duration_ms: spec.end.at - spec.at,
      row_version: String(spec.end.rev || 1),
    },
  };
}

export function classEvent(name: string, definition: object | null, revision: number, wallTime: number, cluster = 'c1'): AuditEventRow {
  return {
    cluster,
    revision: String(revision),
    key: `/sys/class/${name}`,
    event_type: 'class-change',
    op: definition ? 'put' : 'delete',
    namespace: '',
    lock_path: '',
    class: name,
    holder: '',
    session: '0',
    token: '0',
    epoch: 40,
    grant_revision: '0',
    wait_ms: 0,
    wall_time: wallTime,
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: String(revision),
    mod_revision: String(revision),
    version: '1',
    lease: '0',
    value: definition ? JSON.stringify(definition) : '',
    prev_value: '',
    unprotected: 0,
  };
}

export function advisoryClass(name: string, namespace: string, waiverExpires: string, riskOwner = `${name}-owner@corp`): object {
  return {
    name,
    namespace,
    purpose: 'efficiency',
    enforcement: 'advisory',
    riskOwner,
    waiverExpires,
    ttlSeconds: 30,
    tier: 'entity',
    onQuorumLoss: 'open',
    fairness: 'memory',
  };
}

export function fencedClass(name: string, namespace: string): object {
  return {
    name,
    namespace,
    purpose: 'correctness',
    enforcement: 'fenced',
    ttlSeconds: 15,
    tier: 'entity',
    onQuorumLoss: 'closed',
    fairness: 'memory',
    pauseTest: 'pt-1',
  };
}

export const addDays = (date: string, days: number): string => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
