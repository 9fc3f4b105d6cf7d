// The advisory risk register (DESIGN §4): one row per advisory lock class —
// owner, waiver expiry, days left, status, and how much it was used over the
// last 24 h and 30 d (including writes that went around the lock API: foreign
// grants and holds deleted by hand). Built nightly by a job (job.ts) and on demand; every
// run is kept (risk_register_runs + risk_register), served as JSON, CSV, HTML.
import Type, { type Static } from 'typebox';
import { PREFIX, StoredClassSchema, decodeValue } from '../../core/keyspace.js';
import { NullableNumber, NullableString } from '../../grants/schemas.js';
import { NarrowedSchema, type ReadScope } from '../../grants/scope.js';
import { LockauditError } from '../../core/errors.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import { toCsv } from '../../grants/csv.js';
import { escapeHtml, num } from '../render.js';
import { loadSql } from '../../platform/sql.js';
import { dateInZone, REGISTER_STATUSES, waiverState, type RegisterStatus } from './status.js';

const CLASSES = loadSql('reports/riskRegister/classes.sql');
const USAGE = loadSql('reports/riskRegister/usage.sql');
const LATEST_RUN = loadSql('reports/riskRegister/latestRun.sql');
const RUN_ROWS = loadSql('reports/riskRegister/runRows.sql');

export const RiskRegisterQuery = Type.Object(
  {
    date: Type.Optional(
      Type.String({ format: 'date', description: 'The register of this day (the newest run of it); default the newest register', examples: ['2025-11-29'] }),
    ),
    format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv'), Type.Literal('html')], { default: 'json' })),
  },
  { additionalProperties: false },
);
export type RiskRegisterParams = Static<typeof RiskRegisterQuery>;

const Count = Type.Number();
export const RegisterRowSchema = Type.Object({
  class: Type.String(),
  namespace: Type.String(),
  riskOwner: Type.String(),
  waiverExpires: NullableString('YYYY-MM-DD; null when the class has none'),
  daysLeft: NullableNumber('Days from the register date to the waiver expiry; negative once expired'),
  status: Type.Union([Type.Literal('ok'), Type.Literal('expiring'), Type.Literal('expired'), Type.Literal('unproven')], {
    description:
      "expiring: within 30 days; unproven: the class's latest definition was not written by the lock API (put by hand), so its waiver counts for nothing and nothing is granted under it",
  }),
  grants24h: Count,
  grants30d: Count,
  distinctKeys24h: Count,
  distinctKeys30d: Count,
  expiries24h: Type.Number({ description: 'Grants ended by lease expiry (never released)' }),
  expiries30d: Count,
  forceReleases24h: Count,
  forceReleases30d: Count,
  unprotected24h: Type.Number({ description: 'Grants issued without quorum' }),
  unprotected30d: Count,
  foreignGrants24h: Type.Number({ description: 'Grants put straight into etcd, not by the lock API (origin foreign)' }),
  foreignGrants30d: Count,
  deleted24h: Type.Number({ description: 'Holds deleted by hand: no marker, and the lease outlived them (end kind deleted)' }),
  deleted30d: Count,
});
export type RegisterRow = Static<typeof RegisterRowSchema>;

export const REGISTER_ROW_EXAMPLE: RegisterRow = {
  class: 'cache-refresh',
  namespace: 'catalog',
  riskOwner: 'risk-team@corp',
  waiverExpires: '2025-12-20',
  daysLeft: 21,
  status: 'expiring',
  grants24h: 1840,
  grants30d: 51022,
  distinctKeys24h: 312,
  distinctKeys30d: 2210,
  expiries24h: 3,
  expiries30d: 71,
  forceReleases24h: 0,
  forceReleases30d: 2,
  unprotected24h: 0,
  unprotected30d: 14,
  foreignGrants24h: 0,
  foreignGrants30d: 3,
  deleted24h: 0,
  deleted30d: 1,
};

export const RegisterSchema = Type.Object(
  {
    runId: Type.String(),
    date: Type.String({ format: 'date' }),
    asOf: Type.String({ format: 'date-time' }),
    trigger: Type.Union([Type.Literal('schedule'), Type.Literal('manual')]),
    requestedBy: Type.String(),
    classes: Type.Array(RegisterRowSchema),
    narrowedTo: Type.Optional(NarrowedSchema),
  },
  {
    examples: [
      {
        runId: 'repeat:risk-register-nightly:1764381600000',
        date: '2025-11-29',
        asOf: '2025-11-29T02:00:00.000Z',
        trigger: 'schedule',
        requestedBy: 'scheduler',
        classes: [REGISTER_ROW_EXAMPLE],
      },
    ],
  },
);
export type Register = Static<typeof RegisterSchema>;

interface ClassRow {
  name: string;
  value: string;
  op: string;
  /** 'foreign': the latest change was not the lock API's. */
  origin: string;
}
type UsageRow = { class: string } & Record<string, string | number>;

const USAGE_FIELDS = [
  ['grants24h', 'grants_24h'],
  ['grants30d', 'grants_30d'],
  ['distinctKeys24h', 'distinct_keys_24h'],
  ['distinctKeys30d', 'distinct_keys_30d'],
  ['expiries24h', 'expiries_24h'],
  ['expiries30d', 'expiries_30d'],
  ['forceReleases24h', 'force_releases_24h'],
  ['forceReleases30d', 'force_releases_30d'],
  ['unprotected24h', 'unprotected_24h'],
  ['unprotected30d', 'unprotected_30d'],
  ['foreignGrants24h', 'foreign_grants_24h'],
  ['foreignGrants30d', 'foreign_grants_30d'],
  ['deleted24h', 'deleted_24h'],
  ['deleted30d', 'deleted_30d'],
] as const;

/** Computes the register as of an instant; `timeZone` decides its date. Stores nothing. */
export async function buildRegister(deps: ReportDeps, asOfMs: number, timeZone: string): Promise<{ date: string; classes: RegisterRow[] }> {
  const date = dateInZone(asOfMs, timeZone);
  const defs = await reportRows<ClassRow>(deps, CLASSES, { asOfMs, classPrefix: PREFIX.class });
  const advisory = defs
    .filter((d) => d.op !== 'delete')
    .map((d) => ({ name: d.name, def: decodeValue(StoredClassSchema, d.value), unproven: d.origin === 'foreign' }))
    // An unproven class is listed whatever enforcement it claims: a hand edit to `fenced` must not hide it.
    .filter((d) => d.def?.enforcement === 'advisory' || d.unproven);
  if (advisory.length === 0) return { date, classes: [] };
  const usage = await reportRows<UsageRow>(deps, USAGE, { classes: advisory.map((a) => a.name), asOfMs });
  const byClass = new Map(usage.map((u) => [u.class, u]));
  const classes = advisory.map(({ name, def, unproven }) => {
    const u = byClass.get(name);
    const waiver = waiverState(def?.waiverExpires, date);
    const daysLeft = waiver.daysLeft;
    const status: RegisterStatus = unproven ? 'unproven' : waiver.status;
    const row: RegisterRow = {
      class: name,
      namespace: def?.namespace ?? '',
      riskOwner: def?.riskOwner ?? '',
      waiverExpires: def?.waiverExpires ?? null,
      daysLeft,
      status,
      grants24h: 0,
      grants30d: 0,
      distinctKeys24h: 0,
      distinctKeys30d: 0,
      expiries24h: 0,
      expiries30d: 0,
      forceReleases24h: 0,
      forceReleases30d: 0,
      unprotected24h: 0,
      unprotected30d: 0,
      foreignGrants24h: 0,
      foreignGrants30d: 0,
      deleted24h: 0,
      deleted30d: 0,
    };
    for (const [field, column] of USAGE_FIELDS) row[field] = num(u?.[column]) ?? 0;
    return row;
  });
  return { date, classes };
}

/** Builds and stores one register run. The rows are written before the run row, so a reader never finds a run without its rows. */
export async function runRegister(
  deps: ReportDeps,
  run: { runId: string; asOfMs: number; timeZone: string; trigger: 'schedule' | 'manual'; requestedBy: string },
): Promise<Register> {
  const { date, classes } = await buildRegister(deps, run.asOfMs, run.timeZone);
  await deps.store.insert(
    'risk_register',
    classes.map((c) => ({
      run_id: run.runId,
      register_date: date,
      as_of: run.asOfMs,
      class: c.class,
      namespace: c.namespace,
      risk_owner: c.riskOwner,
      waiver_expires: c.waiverExpires,
      days_left: c.daysLeft,
      status: c.status,
      ...Object.fromEntries(USAGE_FIELDS.map(([field, column]) => [column, c[field]])),
    })),
  );
  await deps.store.insert('risk_register_runs', [
    { run_id: run.runId, register_date: date, as_of: run.asOfMs, trigger: run.trigger, requested_by: run.requestedBy, class_count: classes.length },
  ]);
  return { runId: run.runId, date, asOf: new Date(run.asOfMs).toISOString(), trigger: run.trigger, requestedBy: run.requestedBy, classes };
}

interface RunRow {
  run_id: string;
  register_day: string;
  as_of_ms: string | number;
  trigger: string;
  requested_by: string;
}
interface StoredRow extends Record<string, string | number | null> {
  class: string;
  namespace: string;
  risk_owner: string;
  waiver_day: string | null;
  days_left: number | null;
  status: string;
}

/**
 * A register as a scoped reader (grants/scope.ts) may read it: its namespaces' classes, narrowed and told. A
 * class's use is counted over every cluster, so a token scoped to clusters reads no register (403).
 */
export function scopedRegister(register: Register, scope: ReadScope): Register {
  if (!scope) return register;
  assertRegisterScope(scope);
  return {
    ...register,
    classes: register.classes.filter((c) => scope.namespaces.includes(c.namespace)),
    narrowedTo: { namespaces: scope.namespaces, clusters: [] },
  };
}

/** Refuses (403) a token scoped to clusters: the register's use figures span every cluster. */
export function assertRegisterScope(scope: ReadScope): void {
  if (scope && scope.clusters.length > 0)
    throw new LockauditError(
      'LOCKAUDIT_ERR_AUTH_SCOPE',
      `the risk register counts each class's use over every cluster: a token scoped to clusters (${scope.clusters.join(', ')}) reads none`,
    );
}

/** The newest stored register (of `date` when given); undefined when there is none. */
export async function storedRegister(deps: ReportDeps, date?: string): Promise<Register | undefined> {
  const [run] = await reportRows<RunRow>(deps, LATEST_RUN, { hasDate: date ? 1 : 0, date: date ?? '1970-01-01' });
  if (!run) return undefined;
  const rows = await reportRows<StoredRow>(deps, RUN_ROWS, { runId: run.run_id, date: run.register_day });
  return {
    runId: run.run_id,
    date: run.register_day,
    asOf: new Date(Number(run.as_of_ms)).toISOString(),
    trigger: run.trigger === 'manual' ? 'manual' : 'schedule',
    requestedBy: run.requested_by,
    classes: rows.map((r) => {
      const row: RegisterRow = {
        class: r.class,
        namespace: r.namespace,
        riskOwner: r.risk_owner,
        waiverExpires: r.waiver_day,
        daysLeft: num(r.days_left),
        status: REGISTER_STATUSES.find((s) => s === r.status) ?? 'expired',
        grants24h: 0,
        grants30d: 0,
        distinctKeys24h: 0,
        distinctKeys30d: 0,
        expiries24h: 0,
        expiries30d: 0,
        forceReleases24h: 0,
        forceReleases30d: 0,
        unprotected24h: 0,
        unprotected30d: 0,
        foreignGrants24h: 0,
        foreignGrants30d: 0,
        deleted24h: 0,
        deleted30d: 0,
      };
      for (const [field, column] of USAGE_FIELDS) row[field] = num(r[column]) ?? 0;
      return row;
    }),
  };
}

export const REGISTER_CSV_HEADER = [
  'date',
  'asOf',
  'runId',
  'class',
  'namespace',
  'riskOwner',
  'waiverExpires',
  'daysLeft',
  'status',
  ...USAGE_FIELDS.map(([f]) => f),
] as const;

export function registerCsv(r: Register): string {
  return toCsv(
    REGISTER_CSV_HEADER,
    r.classes.map((c) => [
      r.date,
      r.asOf,
      r.runId,
      c.class,
      c.namespace,
      c.riskOwner,
      c.waiverExpires,
      c.daysLeft,
      c.status,
      ...USAGE_FIELDS.map(([f]) => c[f]),
    ]),
  );
}

const STATUS_COLOUR: Record<RegisterStatus, string> = { ok: '#e6f4ea', expiring: '#fff4ce', expired: '#fde7e9', unproven: '#f3d6f7' };

/** A self-contained, readable HTML page; every value is escaped. */
export function registerHtml(r: Register): string {
  const head = [
    'Class',
    'Namespace',
    'Risk owner',
    'Waiver expires',
    'Days left',
    'Status',
    'Grants 24 h',
    'Grants 30 d',
    'Keys 24 h',
    'Keys 30 d',
    'Expiries 24 h',
    'Expiries 30 d',
    'Force-releases 24 h',
    'Force-releases 30 d',
    'Unprotected 24 h',
    'Unprotected 30 d',
    'Foreign grants 24 h',
    'Foreign grants 30 d',
    'Deleted by hand 24 h',
    'Deleted by hand 30 d',
  ];
  const body = r.classes
    .map((c) => {
      const cells = [c.class, c.namespace, c.riskOwner, c.waiverExpires ?? '—', c.daysLeft ?? '—', c.status, ...USAGE_FIELDS.map(([f]) => c[f])];
      return `<tr style="background:${STATUS_COLOUR[c.status]}">${cells.map((v, i) => `<td${i >= 4 && i !== 5 ? ' class="n"' : ''}>${escapeHtml(v)}</td>`).join('')}</tr>`;
    })
    .join('\n');
  const counts: Record<RegisterStatus, number> = { ok: 0, expiring: 0, expired: 0, unproven: 0 };
  for (const c of r.classes) counts[c.status] += 1;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Advisory risk register ${escapeHtml(r.date)}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:4px 8px}th{background:#f3f3f3;text-align:left}td.n{text-align:right}</style></head>
<body><h1>Advisory risk register — ${escapeHtml(r.date)}</h1>
<p>As of ${escapeHtml(r.asOf)} (${escapeHtml(r.trigger)} run by ${escapeHtml(r.requestedBy)}, id ${escapeHtml(r.runId)}). ${r.classes.length} advisory classes: ${counts.ok} ok, ${counts.expiring} expiring within 30 days, ${counts.expired} expired${counts.unproven ? `, ${counts.unproven} unproven (not written by the lock API)` : ''}.</p>
<table><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead>
<tbody>
${body || `<tr><td colspan="${head.length}">No advisory classes.</td></tr>`}
</tbody></table></body></html>
`;
}
