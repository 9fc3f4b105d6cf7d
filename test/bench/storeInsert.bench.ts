// What the store's threads spend on each captured event, and on each view the
// tailer's inserts feed (issue 45, the cost model's "store insert threads" and
// "merges"): batches of events and grant rows shaped as a catch-up writes them
// (RowBinary, the ingest connection's settings) inserted into stores migrated
// to the newest schema, one per variant — as shipped, without one of the four
// materialized views the two tables feed, without any — in one chdb data
// directory (one database each: chdb allows one directory per process). Each
// phase inserts BATCHES batches into one variant and waits for its merges to
// finish; its CPU is every store-engine thread's (/proc/self/task), the
// encoding on the main thread left out. Each phase starts from empty tables;
// phases rotate over the variants, round after round, so drift falls on all
// alike.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ClickHouseSettings } from '@clickhouse/client';
import { AuditStore } from '../../core/clickhouse.js';
import type { AuditEventRow } from '../../core/events.js';
import { migrate } from '../../core/migrations.js';
import type { GrantRow } from '../../tailer/types.js';
import { grantRows } from '../support/grants.js';
import { grantEventRow } from './benchRows.js';
import { heading, report } from './report.js';
import { threadCpu, threadCpuSince, type ThreadGroup } from './threadCpu.js';

const EVENTS = Number(process.env.BENCH_STORE_INSERT_EVENTS ?? 4_000); // a 200 ms batch at 20 000 events/s
const BATCHES = Number(process.env.BENCH_STORE_INSERT_BATCHES ?? 10);
const ROUNDS = Number(process.env.BENCH_STORE_INSERT_ROUNDS ?? 4);
const VIEWS = ['grants_by_key_mv', 'grants_by_holder_mv', 'grant_tokens_mv', 'grant_high_water_mv'] as const;

interface Variant {
  name: string;
  drop: readonly string[];
  /** Batches joined into one insert (1: as the tailer batches a catch-up). */
  join?: number;
  settings?: ClickHouseSettings;
  /** Each grant's open row left out when its closed row is in the same batch (the closed one replaces it). */
  closedOnly?: boolean;
  store?: AuditStore;
  cpuMs: number[];
}
const variants: Variant[] = [
  { name: 'as shipped (four views)', drop: [], cpuMs: [] },
  ...VIEWS.map((v) => ({ name: `without ${v}`, drop: [v], cpuMs: [] })),
  { name: 'as shipped, batches 4× as long', drop: [], join: 4, cpuMs: [] },
  { name: 'as shipped, one row per grant a batch', drop: [], closedOnly: true, cpuMs: [] },
  { name: 'as shipped, optimize_on_insert = 0', drop: [], settings: { optimize_on_insert: 0 }, cpuMs: [] },
  { name: 'no views', drop: VIEWS, cpuMs: [] },
];

/** Events i .. i+n of a catch-up: a grant (the lock API's value, on a lease) then its release, and the grant rows they make. */
function batch(first: number): { events: AuditEventRow[]; grants: GrantRow[] } {
  const events: AuditEventRow[] = [];
  const grants: GrantRow[] = [];
  for (let i = first; i < first + EVENTS; i += 2) {
    const grant = grantEventRow(i);
    events.push(grant, { ...grantEventRow(i + 1), event_type: 'release', op: 'delete', value: '', prev_value: grant.value });
    const rows = grantRows({
      cluster: 'bench',
      key: `ns${i % 20}/key-${i % 5000}`,
      class: grant.class,
      holder: grant.holder,
      rev: 1_000_000 + i,
      at: grant.wall_time,
      end: { kind: 'release', at: grant.wall_time + 1, rev: 1_000_000 + i + 1 },
    });
    grants.push(rows.open, ...(rows.closed ? [rows.closed] : []));
  }
  const stamp = <T extends object>(r: T): T => ({ ...r, timeline: 0, term: '5' });
  return { events: events.map(stamp), grants: grants.map(stamp) };
}

const isStore = (g: ThreadGroup): boolean => g !== 'main thread' && g !== 'V8 helper threads (GC, compile)' && g !== 'libuv pool';

const TABLES = ['events', 'grants', 'grants_by_key', 'grants_by_holder', 'grant_tokens', 'grant_high_water'];

/** Until no merge has run for a second (the scheduler starts them a moment after an insert). */
async function mergesSettled(store: AuditStore): Promise<void> {
  let quiet = 0;
  while (quiet < 10) {
    const [r] = await store.rows<{ n: string }>('SELECT count() AS n FROM system.merges');
    quiet = Number(r?.n ?? 0) === 0 ? quiet + 1 : 0;
    await new Promise((res) => setTimeout(res, 100));
  }
}

const dir = mkdtempSync(path.join(tmpdir(), 'lockaudit-bench-store-insert-'));
try {
  for (const [i, v] of variants.entries()) {
    v.store = new AuditStore({ mode: 'embedded', path: dir, database: `lockaudit_v${i}` });
    await migrate(v.store);
    for (const view of v.drop) await v.store.command('DROP VIEW {db:Identifier}.{v:Identifier}', { v: view });
  }
  heading(`store CPU per captured event: ${BATCHES} batches of ${EVENTS} events (+ their grant rows) per phase, ${ROUNDS} rounds`);
  let next = 0;
  for (let round = 0; round < ROUNDS + 1; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length] as Variant);
    for (const v of order) {
      const store = v.store as AuditStore;
      const join = v.join ?? 1;
      const batches = Array.from({ length: Math.ceil(BATCHES / join) }, () => {
        const parts = Array.from({ length: join }, () => batch((next += EVENTS)));
        return { events: parts.flatMap((p) => p.events), grants: parts.flatMap((p) => p.grants) };
      });
      // Each phase starts from empty tables: the same parts and merges every round, not a table growing under them.
      for (const t of TABLES) await store.command('TRUNCATE TABLE {db:Identifier}.{t:Identifier}', { t });
      await mergesSettled(store);
      const before = threadCpu();
      for (const b of batches) {
        await store.insert('events', b.events, { binary: true, settings: v.settings });
        const grants = v.closedOnly ? b.grants.filter((g) => g.end_kind !== '') : b.grants;
        await store.insert('grants', grants, { binary: true, settings: v.settings });
      }
      await mergesSettled(store);
      let ms = 0;
      for (const [group, used] of threadCpuSince(before)) if (isStore(group)) ms += used;
      if (round > 0) v.cpuMs.push((ms * BATCHES) / (batches.length * join)); // round 0 warms up; per BATCHES batches
    }
  }
  const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const perEvent = (v: Variant): number => (median(v.cpuMs) * 1000) / (BATCHES * EVENTS);
  const [shipped, ...rest] = variants as [Variant, ...Variant[]];
  const none = rest[rest.length - 1] as Variant;
  report({
    name: 'store CPU per event, as shipped',
    value: perEvent(shipped),
    unit: 'µs',
    baselineName: 'the same, no views',
    baseline: perEvent(none),
    higherIsBetter: false,
  });
  for (const v of rest.slice(0, -1)) {
    report({
      name: `store CPU per event, ${v.name}`,
      value: perEvent(v),
      unit: 'µs',
      baselineName: 'as shipped',
      baseline: perEvent(shipped),
      higherIsBetter: false,
    });
  }
  process.stdout.write(
    `(a view's cost is "as shipped" less "without" it; every phase's CPU ms: ${variants.map((v) => `${v.name} ${v.cpuMs.map((x) => Math.round(x)).join('/')}`).join('; ')})\n`,
  );
} finally {
  for (const v of variants) await v.store?.close();
  rmSync(dir, { recursive: true, force: true });
}
