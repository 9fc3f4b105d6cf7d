// The keyspace at a moment (issue 15): every hold, queue entry and class in
// force at one revision, from captured events alone (events FINAL; no etcd
// history). A time resolves to the newest captured revision at or before it.
// Keys the log cannot answer for (a gap) come back as unknown, naming the gap.
import Type, { type Static } from 'typebox';
import { LockauditError } from '../../core/errors.js';
import { INSTANT_RULE, parseInstant } from '../../core/instant.js';
import { PREFIX } from '../../core/keyspace.js';
import { pickCluster, type ClusterDeps } from '../../grants/clusters.js';
import { NarrowedSchema, scopeParams, scopeRead, type ReadScope } from '../../grants/scope.js';
import { loadSql } from '../../platform/sql.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import { ClusterName, KeyPrefix, NullableString } from '../../grants/schemas.js';
import { assembleState, containingGap, gapsOfTimeline, type ClassRow, type EntryRow, type GapRow, type KeyspaceState, type TimelineRow } from './assemble.js';

const LATEST = loadSql('reports/state/latest.sql');
const CLASSES = loadSql('reports/state/classes.sql');
const SNAPSHOT = loadSql('reports/state/snapshot.sql');
const GAPS = loadSql('reports/state/gaps.sql');
const AT_TIME = loadSql('reports/state/atTime.sql');
const TIMELINES = loadSql('reports/state/timelines.sql');
// Every cluster's checkpoint in effect, as the tailer reads it (timeline-aware), in the one SQL reading of it below the
// domains: a test keeps it equal to the tailer's, and nothing outside the tailer imports tailer/ (docs/architecture.md).
const POSITIONS = loadSql('grants/checkpointInEffect.sql');

/** What the state reads need: the store, the limits and the configured clusters (grants/clusters.ts). */
export type StateDeps = ClusterDeps;

/** A revision (decimal) or an RFC 3339 instant with a zone. */
export const Moment = (description: string) =>
  Type.String({
    pattern: '^((0|[1-9][0-9]{0,19})|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2}))$',
    description,
    examples: ['2025-11-29T14:03:07.250Z', '1734'],
  });

/** The `timeline` query parameter of revision-based views. */
export const TimelineParam = () =>
  Type.Integer({
    minimum: 0,
    maximum: 4_294_967_295,
    description:
      'The etcd timeline (generation: 0 first, each restore the tailer recorded starts the next): revisions are read as that timeline had them. Default the current one',
  });

export const StateQuery = Type.Object(
  {
    at: Moment('The moment: an etcd revision (decimal) or an RFC 3339 time (resolved to the newest captured revision at or before it)'),
    prefix: Type.Optional(KeyPrefix()),
    cluster: Type.Optional(ClusterName({ description: 'The etcd cluster; default the first configured' })),
    timeline: Type.Optional(TimelineParam()),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        default: 1000,
        description: 'At most this many holds and queue entries (at most LOCKAUDIT_MAX_PAGE_SIZE); truncated says when more exist',
      }),
    ),
  },
  { additionalProperties: false },
);
export type StateParams = Static<typeof StateQuery>;

const GapRefSchema = Type.Object({ fromRevision: Type.String(), toRevision: Type.String(), reason: Type.String() });

export const HoldItemSchema = Type.Object({
  key: Type.String(),
  holder: Type.String(),
  session: Type.String({ description: "The holder's etcd lease id (decimal)" }),
  token: Type.String({ description: 'Fencing token, decimal string (exceeds 2^53)' }),
  class: Type.String(),
  epoch: Type.Integer(),
  grantRevision: Type.String(),
  since: Type.String({ format: 'date-time', description: 'Grant wall time from the hold value' }),
  startKnown: Type.Boolean({ description: 'false when the grant was seen only in a snapshot after a gap' }),
});

const QueueItemSchema = Type.Object({
  key: Type.String(),
  leaseId: Type.String(),
  holder: Type.String(),
  session: Type.String(),
  class: Type.String(),
  since: Type.String({ format: 'date-time' }),
  sinceRevision: Type.String(),
});
const Origin = Type.Union([Type.Literal('api'), Type.Literal('foreign')], {
  description: 'foreign: not written by the lock API (no proof): nothing is granted under it',
});
const ClassItemSchema = Type.Object({ name: Type.String(), revision: Type.String(), definition: Type.Record(Type.String(), Type.Unknown()), origin: Origin });
const UnknownItemSchema = Type.Object({
  key: Type.String(),
  kind: Type.Union([Type.Literal('hold'), Type.Literal('queue'), Type.Literal('class')]),
  reason: Type.String(),
  gap: Type.Union([GapRefSchema, Type.Null()]),
  lastKnownRevision: NullableString('The revision of the last state the log knows'),
  lastKnownHolder: NullableString('The holder last known, for holds'),
});

export const MomentSchema = Type.Object({
  requested: Type.String({ description: 'at as given' }),
  revision: Type.String({ description: 'The revision answered for (decimal)' }),
  capturedThrough: Type.String({ description: 'The tailer checkpoint in that timeline: every change up to it is captured' }),
  timeline: Type.Integer({ description: 'The etcd timeline answered for (generation)' }),
});

const STATE_EXAMPLE = {
  cluster: 'local',
  at: { requested: '2025-11-29T14:03:07.250Z', revision: '1790', capturedThrough: '2210', timeline: 0 },
  holds: [
    {
      key: 'payments/acct-7',
      holder: 'spiffe://corp/payments-worker',
      session: '7587883164012345',
      token: '11258999068428022',
      class: 'ledger-entry',
      epoch: 0,
      grantRevision: '1734',
      since: '2025-11-29T14:02:58.120Z',
      startKnown: true,
    },
  ],
  queue: [
    {
      key: 'payments/acct-7',
      leaseId: '7587883164012399',
      holder: 'spiffe://corp/refunds',
      session: '7587883164012399',
      class: 'ledger-entry',
      since: '2025-11-29T14:03:01.000Z',
      sinceRevision: '1771',
    },
  ],
  classes: [
    {
      name: 'ledger-entry',
      revision: '12',
      definition: { name: 'ledger-entry', namespace: 'payments', purpose: 'correctness', enforcement: 'fenced' },
      origin: 'api',
    },
  ],
  epoch: { epoch: 0, revision: '2', origin: 'api' },
  unknown: [],
  gaps: [],
  complete: true,
  truncated: false,
};

export const StateSchema = Type.Object(
  {
    cluster: Type.String(),
    at: MomentSchema,
    holds: Type.Array(HoldItemSchema),
    queue: Type.Array(QueueItemSchema),
    classes: Type.Array(ClassItemSchema),
    epoch: Type.Union([Type.Object({ epoch: Type.Integer(), revision: Type.String(), origin: Origin }), Type.Null()]),
    unknown: Type.Array(UnknownItemSchema, { description: 'Keys whose state at this revision the log cannot tell, each with the gap that hides it' }),
    gaps: Type.Array(GapRefSchema, { description: 'Recorded gaps that lost history of this timeline and begin at or before this revision' }),
    complete: Type.Boolean({ description: 'false when the revision lies inside a gap: holds granted and ended inside it are not in the log' }),
    truncated: Type.Boolean({ description: 'More holds or queue entries than limit' }),
    narrowedTo: Type.Optional(NarrowedSchema),
  },
  { examples: [STATE_EXAMPLE] },
);
export type StateResponse = Static<typeof StateSchema>;

export interface ResolvedMoment {
  requested: string;
  revision: bigint;
  capturedThrough: bigint;
  timeline: number;
}

export interface ResolvedTimeline {
  /** The generation asked for, or the current one. */
  timeline: number;
  /** Where its capture stands (the current one) or stopped (an ended one). */
  capturedThrough: bigint;
}

/**
 * The timeline asked for (default the current one) and how far it is captured:
 * the current one's checkpoint is the one the tailer resumes from (written
 * since its restore), an ended one's is where the next restore found it.
 * 400 naming `field` for a timeline the cluster never had.
 */
export async function resolveTimeline(
  deps: ReportDeps,
  cluster: string,
  timeline: number | undefined,
  field = 'querystring.timeline',
): Promise<ResolvedTimeline> {
  const rows = await reportRows<{ generation: number; previous_checkpoint: string }>(deps, TIMELINES, { cluster });
  const current = Math.max(0, ...rows.map((r) => Number(r.generation)));
  const t = timeline ?? current;
  if (t > current) throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', `${field}: ${cluster} has timelines 0..${current}`);
  if (t === current) {
    const positions = await reportRows<{ cluster: string; revision: string }>(deps, POSITIONS, {});
    return { timeline: t, capturedThrough: BigInt(positions.find((p) => p.cluster === cluster)?.revision ?? 0) };
  }
  const next = rows.find((r) => Number(r.generation) === t + 1);
  return { timeline: t, capturedThrough: BigInt(next?.previous_checkpoint ?? 0) };
}

/** Resolves a revision or a time to a captured revision; 400 naming `field` when it cannot be answered. */
export async function resolveMoment(deps: StateDeps, cluster: string, at: string, field: string, timeline: ResolvedTimeline): Promise<ResolvedMoment> {
  const capturedThrough = timeline.capturedThrough;
  let revision: bigint;
  if (/^\d+$/.test(at)) {
    revision = BigInt(at);
    if (revision > capturedThrough) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_VALIDATION',
        `${field}: revision ${revision} is after the tailer's checkpoint ${capturedThrough} for ${cluster}; it is not captured yet`,
      );
    }
  } else {
    // The project's one reading of an instant (core/instant.ts): Date.parse would read 2099-02-30 as 2 March and 2301 as a year we cannot store.
    const ms = parseInstant(at);
    if (ms === undefined) throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', `${field}: is neither a revision nor ${INSTANT_RULE}`);
    // A moment not yet lived is not captured either (as a revision past the checkpoint): before, the current state answered it.
    if (ms > Date.now()) throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', `${field}: ${at} is in the future; it is not captured yet`);
    const [row] = await reportRows<{ revision: string | null }>(deps, AT_TIME, { cluster, atMs: ms, timeline: timeline.timeline });
    revision = BigInt(row?.revision ?? 0);
    if (revision > capturedThrough) revision = capturedThrough;
  }
  if (revision === 0n) throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', `${field}: no captured history of ${cluster} at or before ${at}`);
  return { requested: at, revision, capturedThrough, timeline: timeline.timeline };
}

/** Namespace filter for classes: the namespace segment of a prefix (or a namespace prefix when it has no '/'). */
export function classInPrefix(namespace: unknown, prefix: string | undefined): boolean {
  if (!prefix) return true;
  if (typeof namespace !== 'string') return false;
  const slash = prefix.indexOf('/');
  return slash < 0 ? namespace.startsWith(prefix) : namespace === prefix.slice(0, slash);
}

/** The namespace a class definition names, if any (its value as written; anything unreadable names none). */
function classNamespace(value: string): string | undefined {
  try {
    const v: unknown = JSON.parse(value);
    const ns = v !== null && typeof v === 'object' ? (v as { namespace?: unknown }).namespace : undefined;
    return typeof ns === 'string' ? ns : undefined;
  } catch {
    return undefined;
  }
}

/** A class a scoped reader sees: one of its namespaces', or one bound to no namespace. */
export function classInScope(namespace: unknown, scope: ReadScope): boolean {
  if (!scope || scope.namespaces.length === 0) return true;
  return typeof namespace !== 'string' || namespace === '' || scope.namespaces.includes(namespace);
}

/**
 * The cluster a read of one cluster asks about, for a scoped reader too: a cluster outside its scope is a 403
 * (scopeRead, before the lookup); none given is the first configured, or the first of a cluster-scoped token's.
 */
export async function scopedCluster(deps: StateDeps, scope: ReadScope, cluster: string | undefined, prefix: string | undefined): Promise<string> {
  scopeRead(scope, { cluster, keyPrefix: prefix }, stateField);
  return pickCluster(deps, cluster ?? (scope && scope.clusters.length > 0 ? scope.clusters[0] : undefined));
}

/** The state and diff routes' names for the filters a scope bounds. */
const stateField = (name: string): string => `querystring.${name === 'keyPrefix' ? 'prefix' : name}`;

/** The keyspace of `cluster` at a resolved revision, under `prefix` (and within a scoped reader's scope). */
export async function keyspaceAt(
  deps: ReportDeps,
  cluster: string,
  revision: bigint,
  prefix: string,
  limit: number,
  timeline: number,
  scope: ReadScope = null,
): Promise<KeyspaceState & { truncated: boolean }> {
  const rev = revision.toString();
  const bound = scopeParams(scope);
  const [latest, classes, allGaps, timelines] = await Promise.all([
    reportRows<EntryRow>(deps, LATEST, {
      cluster,
      revision: rev,
      holdPrefix: `${PREFIX.hold}${prefix}`,
      queuePrefix: `${PREFIX.queue}${prefix}`,
      timeline,
      limit: limit + 1,
      ...bound,
    }),
    reportRows<ClassRow>(deps, CLASSES, { cluster, revision: rev, classPrefix: PREFIX.class, epochKey: PREFIX.epoch, timeline }),
    reportRows<GapRow>(deps, GAPS, { cluster, revision: rev }),
    reportRows<TimelineRow>(deps, TIMELINES, { cluster }),
  ]);
  const gaps = gapsOfTimeline(allGaps, timelines, timeline);
  const inside = containingGap(gaps, revision);
  const snapshotAfter = inside
    ? await reportRows<EntryRow>(deps, SNAPSHOT, { cluster, revision: String(inside.to_revision), holdPrefix: `${PREFIX.hold}${prefix}`, timeline, ...bound })
    : [];
  const state = assembleState({
    revision,
    latest: latest.slice(0, limit),
    classes,
    gaps,
    snapshotAfter,
  });
  state.classes = state.classes.filter((c) => classInPrefix(c.definition.namespace, prefix) && classInScope(c.definition.namespace, scope));
  if (scope && scope.namespaces.length > 0) {
    // A class the log cannot vouch for (a gap after its last change) is named too: only a class of the scope's.
    const namespaceOf = new Map(classes.map((c) => [c.key.slice(PREFIX.class.length), classNamespace(c.value)]));
    state.unknown = state.unknown.filter((u) => u.kind !== 'class' || classInScope(namespaceOf.get(u.key), scope));
  }
  return { ...state, truncated: latest.length > limit };
}

export { stateField };

export function checkLimit(deps: ReportDeps, limit: number | undefined): number {
  const n = limit ?? 1000;
  if (n > deps.limits.maxPageSize)
    throw new LockauditError('LOCKAUDIT_ERR_LIMIT_PAGE_SIZE', `querystring.limit: ${n} is more than LOCKAUDIT_MAX_PAGE_SIZE (${deps.limits.maxPageSize})`);
  return n;
}

/** GET /v1/state. */
export async function stateAt(deps: StateDeps, p: StateParams, scope: ReadScope = null): Promise<StateResponse> {
  const limit = checkLimit(deps, p.limit);
  const cluster = await scopedCluster(deps, scope, p.cluster, p.prefix);
  const narrowed = scopeRead(scope, { cluster, keyPrefix: p.prefix }, stateField);
  const timeline = await resolveTimeline(deps, cluster, p.timeline);
  const moment = await resolveMoment(deps, cluster, p.at, 'querystring.at', timeline);
  const state = await keyspaceAt(deps, cluster, moment.revision, p.prefix ?? '', limit, timeline.timeline, scope);
  return {
    cluster,
    at: { requested: moment.requested, revision: moment.revision.toString(), capturedThrough: moment.capturedThrough.toString(), timeline: moment.timeline },
    ...state,
    ...(narrowed ? { narrowedTo: narrowed } : {}),
  };
}
