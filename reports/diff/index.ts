// What changed between two moments (issue 15): holds that appeared, ended
// (how, when, by whom) or changed holder; classes created, changed field by
// field, deleted; epoch advances; force-releases — each with its revision and
// who. Both ends are states from reports/state, so the hold lists are exactly
// the set difference of the two states; gaps inside the window are named.
import { END_KINDS } from '../../core/events.js';
import Type, { type Static } from 'typebox';
import { LockauditError } from '../../core/errors.js';
import { ForceRecordSchema, MarkValueSchema, PREFIX, decodeValue, parseLockName } from '../../core/keyspace.js';
import { loadSql } from '../../platform/sql.js';
import { reportRows } from '../../platform/reportQuery.js';
import { ClusterName, KeyPrefix, NullableString } from '../../grants/schemas.js';
import type { GapRef, HoldItem } from '../state/assemble.js';
import {
  HoldItemSchema,
  MomentSchema,
  Moment,
  TimelineParam,
  checkLimit,
  classInPrefix,
  classInScope,
  keyspaceAt,
  resolveMoment,
  resolveTimeline,
  scopedCluster,
  stateField,
  type StateDeps,
} from '../state/index.js';
import { NarrowedSchema, scopeRead, type ReadScope } from '../../grants/scope.js';
import { compareStates } from './compare.js';

const GRANT_ENDS = loadSql('reports/diff/grantEnds.sql');
const WINDOW_EVENTS = loadSql('reports/diff/windowEvents.sql');
const MARKERS = loadSql('reports/diff/markers.sql');

export const DiffQuery = Type.Object(
  {
    from: Moment('The earlier moment: a revision or an RFC 3339 time'),
    to: Moment('The later moment: a revision or an RFC 3339 time'),
    prefix: Type.Optional(KeyPrefix()),
    cluster: Type.Optional(ClusterName({ description: 'The etcd cluster; default the first configured' })),
    timeline: Type.Optional(TimelineParam()),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, default: 1000, description: 'At most this many holds per state and events in the window (at most LOCKAUDIT_MAX_PAGE_SIZE)' }),
    ),
  },
  { additionalProperties: false },
);
export type DiffParams = Static<typeof DiffQuery>;

const GapRefSchema = Type.Object({ fromRevision: Type.String(), toRevision: Type.String(), reason: Type.String() });
const Grant = Type.Object({ holder: Type.String(), grantRevision: Type.String(), token: Type.String() });
const EndKind = Type.Union(
  END_KINDS.map((k) => Type.Literal(k)),
  { description: 'deleted: removed by hand while its lease lived; unknown: no end was captured (it lies in a gap)' },
);
const EndedHold = Type.Intersect([
  HoldItemSchema,
  Type.Object({
    endKind: EndKind,
    endRevision: NullableString('The revision of the end event'),
    endedAt: NullableString('Wall time of the end (an estimate for expiries)'),
    endedBy: NullableString('Who ended it: the releasing holder, the closer of the session, the approver of a force-release; null for a lease expiry'),
  }),
]);
const Origin = Type.Union([Type.Literal('api'), Type.Literal('foreign')], {
  description: 'foreign: written around the lock API (no proof); the API does not act on it',
});
const ClassItem = Type.Object({ name: Type.String(), revision: Type.String(), definition: Type.Record(Type.String(), Type.Unknown()), origin: Origin });
const FieldChange = Type.Object({ field: Type.String(), before: Type.Unknown(), after: Type.Unknown() });

const DIFF_EXAMPLE = {
  cluster: 'local',
  from: { requested: '1700', revision: '1700', capturedThrough: '2210', timeline: 0 },
  to: { requested: '2025-11-29T14:05:00Z', revision: '1820', capturedThrough: '2210', timeline: 0 },
  holds: {
    appeared: [
      {
        key: 'payments/acct-7',
        holder: 'spiffe://corp/refunds',
        session: '7587883164012399',
        token: '1801',
        class: 'ledger-entry',
        epoch: 0,
        grantRevision: '1801',
        since: '2025-11-29T14:04:10.000Z',
        startKnown: true,
      },
    ],
    ended: [
      {
        key: 'payments/acct-7',
        holder: 'spiffe://corp/payments-worker',
        session: '7587883164012345',
        token: '1734',
        class: 'ledger-entry',
        epoch: 0,
        grantRevision: '1734',
        since: '2025-11-29T14:02:58.120Z',
        startKnown: true,
        endKind: 'force',
        endRevision: '1790',
        endedAt: '2025-11-29T14:03:30.000Z',
        endedBy: 'ops-b@corp',
      },
    ],
    changedHolder: [
      {
        key: 'payments/acct-7',
        before: { holder: 'spiffe://corp/payments-worker', grantRevision: '1734', token: '1734' },
        after: { holder: 'spiffe://corp/refunds', grantRevision: '1801', token: '1801' },
      },
    ],
  },
  classes: { created: [], changed: [{ name: 'ledger-entry', revision: '1760', fields: [{ field: 'ttlSeconds', before: 15, after: 30 }] }], deleted: [] },
  epochAdvances: [],
  forceReleases: [
    {
      revision: '1790',
      key: 'payments/acct-7',
      holder: 'spiffe://corp/payments-worker',
      token: '1734',
      class: 'ledger-entry',
      enforcement: 'fenced',
      requester: 'ops-a@corp',
      approver: 'ops-b@corp',
      reason: 'stuck worker',
      revokedSession: false,
      origin: 'api',
    },
  ],
  unknown: { from: [], to: [] },
  gaps: [],
  complete: true,
  truncated: false,
};

export const DiffSchema = Type.Object(
  {
    cluster: Type.String(),
    from: MomentSchema,
    to: MomentSchema,
    holds: Type.Object({
      appeared: Type.Array(HoldItemSchema, { description: 'Grants held at `to` and not at `from`' }),
      ended: Type.Array(EndedHold, { description: 'Grants held at `from` and not at `to`, with how they ended' }),
      changedHolder: Type.Array(Type.Object({ key: Type.String(), before: Grant, after: Grant }), {
        description: 'Keys held at both moments under different grants',
      }),
    }),
    classes: Type.Object({
      created: Type.Array(ClassItem),
      changed: Type.Array(Type.Object({ name: Type.String(), revision: Type.String(), fields: Type.Array(FieldChange) })),
      deleted: Type.Array(ClassItem, { description: 'Classes defined at `from` and not at `to` (their last definition)' }),
    }),
    epochAdvances: Type.Array(
      Type.Object({ revision: Type.String(), epoch: Type.Integer(), by: NullableString('Who approved the advance (from its marker)'), origin: Origin }),
    ),
    forceReleases: Type.Array(
      Type.Object({
        revision: Type.String(),
        key: Type.String(),
        holder: Type.String(),
        token: Type.String(),
        class: Type.String(),
        enforcement: Type.String(),
        requester: Type.String(),
        approver: Type.String(),
        reason: Type.String(),
        revokedSession: Type.Boolean(),
        origin: Origin,
      }),
    ),
    unknown: Type.Object(
      { from: Type.Array(Type.Unknown()), to: Type.Array(Type.Unknown()) },
      { description: 'Keys the log cannot answer for at either end (see GET /v1/state)' },
    ),
    gaps: Type.Array(GapRefSchema, { description: 'Recorded gaps inside or across the window: history there is missing' }),
    complete: Type.Boolean({ description: 'false when a gap lies inside the window or either end is inside one' }),
    truncated: Type.Boolean(),
    narrowedTo: Type.Optional(NarrowedSchema),
  },
  { examples: [DIFF_EXAMPLE] },
);
export type DiffResponse = Static<typeof DiffSchema>;

interface EndRow {
  key: string;
  grant_revision: string;
  end_kind: string;
  end_revision: string;
  ended_ms: string | number | null;
}

interface EventRow {
  revision: string;
  key: string;
  event_type: string;
  epoch?: number | string;
  value: string;
  origin?: string;
}

const holdKeyOf = (lockOrKey: string): string => (lockOrKey.startsWith(PREFIX.hold) ? lockOrKey.slice(PREFIX.hold.length) : lockOrKey);

/** Who ended `hold` at `revision`, from the marker or force record written in the same txn. */
export function endedBy(hold: HoldItem, endKind: string, markers: readonly EventRow[]): string | null {
  for (const m of markers) {
    if (endKind === 'force' && m.event_type === 'force-record') {
      const f = decodeValue(ForceRecordSchema, m.value);
      if (f && holdKeyOf(f.key) === hold.key) return f.approver;
    } else if (m.event_type === 'marker') {
      const v = decodeValue(MarkValueSchema, m.value);
      if (!v) continue;
      if (endKind === 'release' && v.kind === 'release' && v.key !== undefined && holdKeyOf(v.key) === hold.key) return v.by;
      if (endKind === 'session-close' && v.kind === 'session-close' && (v.session === undefined || v.session === hold.session)) return v.by;
      if (endKind === 'epoch-advance' && v.kind === 'epoch-advance') return v.by;
    }
  }
  return null;
}

export async function diff(deps: StateDeps, p: DiffParams, scope: ReadScope = null): Promise<DiffResponse> {
  const limit = checkLimit(deps, p.limit);
  const cluster = await scopedCluster(deps, scope, p.cluster, p.prefix);
  const narrowed = scopeRead(scope, { cluster, keyPrefix: p.prefix }, stateField);
  const tl = await resolveTimeline(deps, cluster, p.timeline);
  const timeline = tl.timeline;
  const from = await resolveMoment(deps, cluster, p.from, 'querystring.from', tl);
  const to = await resolveMoment(deps, cluster, p.to, 'querystring.to', tl);
  if (from.revision > to.revision)
    throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', `querystring.from: resolves to revision ${from.revision}, after to (${to.revision})`);
  const prefix = p.prefix ?? '';
  const [a, b] = [
    await keyspaceAt(deps, cluster, from.revision, prefix, limit, timeline, scope),
    await keyspaceAt(deps, cluster, to.revision, prefix, limit, timeline, scope),
  ];
  const changes = compareStates(a, b);

  const ends = changes.ended.length
    ? await reportRows<EndRow>(deps, GRANT_ENDS, { cluster, keys: [...new Set(changes.ended.map((h) => h.key))], timeline })
    : [];
  const endOf = new Map(ends.map((e) => [`${e.key}\u0000${e.grant_revision}`, e]));
  const windowEvents = await reportRows<EventRow>(deps, WINDOW_EVENTS, {
    cluster,
    fromRevision: from.revision.toString(),
    toRevision: to.revision.toString(),
    timeline,
    limit: limit + 1,
    scopeNamespaces: scope?.namespaces ?? [],
    holdPrefix: PREFIX.hold,
  });
  const endRevisions = [
    ...new Set([...ends.map((e) => String(e.end_revision)), ...windowEvents.filter((e) => e.event_type === 'epoch-advance').map((e) => String(e.revision))]),
  ];
  const markers = endRevisions.length ? await reportRows<EventRow>(deps, MARKERS, { cluster, revisions: endRevisions.map(Number), timeline }) : [];
  const markersAt = (rev: string): EventRow[] => markers.filter((m) => String(m.revision) === rev);

  const ended = changes.ended.map((h) => {
    const e = endOf.get(`${h.key}\u0000${h.grantRevision}`);
    if (!e) return { ...h, endKind: 'unknown', endRevision: null, endedAt: null, endedBy: null };
    const rev = String(e.end_revision);
    return {
      ...h,
      endKind: e.end_kind,
      endRevision: rev,
      endedAt: e.ended_ms === null ? null : new Date(Number(e.ended_ms)).toISOString(),
      endedBy: endedBy(h, e.end_kind, markersAt(rev)),
    };
  });

  const forceReleases = [];
  const epochAdvances = [];
  for (const ev of windowEvents.slice(0, limit)) {
    if (ev.event_type === 'epoch-advance') {
      const by =
        markersAt(String(ev.revision))
          .map((m) => decodeValue(MarkValueSchema, m.value))
          .find((m) => m?.kind === 'epoch-advance')?.by ?? null;
      epochAdvances.push({
        revision: String(ev.revision),
        epoch: Number(ev.epoch ?? 0),
        by,
        origin: ev.origin === 'foreign' ? ('foreign' as const) : ('api' as const),
      });
      continue;
    }
    const f = decodeValue(ForceRecordSchema, ev.value);
    if (!f || !holdKeyOf(f.key).startsWith(prefix)) continue;
    if (scope && scope.namespaces.length > 0 && !scope.namespaces.includes(parseLockName(holdKeyOf(f.key))?.namespace ?? '')) continue;
    forceReleases.push({
      revision: String(ev.revision),
      key: holdKeyOf(f.key),
      holder: f.holder,
      token: f.token,
      class: f.class,
      enforcement: f.enforcement,
      requester: f.requester,
      approver: f.approver,
      reason: f.reason,
      revokedSession: f.revokedSession,
      origin: ev.origin === 'foreign' ? ('foreign' as const) : ('api' as const),
    });
  }

  // Gaps that overlap (from, to]: history inside the window that is missing.
  const gaps: GapRef[] = b.gaps.filter((g) => BigInt(g.toRevision) > from.revision);
  return {
    cluster,
    from: { requested: from.requested, revision: from.revision.toString(), capturedThrough: from.capturedThrough.toString(), timeline },
    to: { requested: to.requested, revision: to.revision.toString(), capturedThrough: to.capturedThrough.toString(), timeline },
    holds: { appeared: changes.appeared, ended: ended as DiffResponse['holds']['ended'], changedHolder: changes.changedHolder },
    classes: {
      created: changes.classesCreated.filter((c) => classInPrefix(c.definition.namespace, prefix) && classInScope(c.definition.namespace, scope)),
      changed: changes.classesChanged,
      deleted: changes.classesDeleted,
    },
    epochAdvances,
    forceReleases,
    unknown: { from: a.unknown, to: b.unknown },
    gaps,
    complete: a.complete && b.complete && gaps.length === 0,
    truncated: a.truncated || b.truncated || windowEvents.length > limit,
    ...(narrowed ? { narrowedTo: narrowed } : {}),
  };
}
