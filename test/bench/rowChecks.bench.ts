// What the tailer's sink spends finding the rows the store cannot take, per
// row, over events and grant rows shaped as the tailer writes them (issue 45,
// the main thread's "RowBinary rows and their range check" stage): the rows
// encoded with the check in the encoder's one pass (store.insert's `rejected`,
// core/rowBinary.ts), against the way before 2026-12-07 — a range check of
// each row's columns (`outOfRangeBefore`, kept here as it was) and then the
// encoding. Alternating which runs first; the encoders come from the tables'
// own columns (DESCRIBE, as the store builds them).
import { rowBinaryEncoder, type RowBinaryEncoder } from '../../core/rowBinary.js';
import { tempStore } from '../support/env.js';
import { grantRows } from '../support/grants.js';
import { grantEventRow as event } from './benchRows.js';
import { heading, report } from './report.js';

const ROWS = Number(process.env.BENCH_ROW_CHECK_ROWS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROW_CHECK_ROUNDS ?? 30);

// The check before (tailer/sink/rowWriter.ts until 2026-12-07), verbatim but for its name.
const UINT32 = ['epoch', 'time_error_ms', 'ended_at_error_ms'];
const UINT64 = ['revision', 'token', 'grant_revision', 'wait_ms', 'create_revision', 'mod_revision', 'end_revision', 'row_version', 'term'];
const DATETIME64 = ['wall_time', 'granted_at', 'ended_at'];
const DATETIME64_MIN_MS = Date.UTC(1900, 0, 1);
const DATETIME64_MAX_MS = Date.UTC(2299, 11, 31, 23, 59, 59, 999);
const UINT64_MAX = 2n ** 64n - 1n;
const DIGITS = /^[0-9]+$/;
function outOfRangeBefore(row: object): string | undefined {
  const r = row as Record<string, unknown>;
  const bad = (column: string, type: string): string => `value out of range for ${type} in column ${column}: ${String(r[column])}`;
  for (const c of UINT32) {
    const v = r[c];
    if (typeof v === 'number' && !(Number.isInteger(v) && v >= 0 && v <= 4_294_967_295)) return bad(c, 'UInt32');
  }
  for (const c of UINT64) {
    const v = r[c];
    if (typeof v === 'number' && !(Number.isSafeInteger(v) && v >= 0)) return bad(c, 'UInt64');
    if (typeof v === 'string' && !(v.length < 20 ? DIGITS.test(v) : /^[0-9]{20}$/.test(v) && BigInt(v) <= UINT64_MAX)) return bad(c, 'UInt64');
  }
  for (const c of DATETIME64) {
    const v = r[c];
    if (typeof v === 'number' && !(Number.isFinite(v) && v >= DATETIME64_MIN_MS && v <= DATETIME64_MAX_MS)) return bad(c, 'DateTime64');
  }
  return undefined;
}

async function encoders(): Promise<{ events: RowBinaryEncoder; grants: RowBinaryEncoder }> {
  const { store, close } = await tempStore();
  try {
    const of = async (table: string): Promise<RowBinaryEncoder> => {
      const cols = await store.rows<{ name: string; type: string; default_type: string }>('DESCRIBE TABLE {db:Identifier}.{t:Identifier}', { t: table });
      const e = rowBinaryEncoder(cols.filter((c) => c.default_type === '' || c.default_type === 'DEFAULT'));
      if (!e) throw new Error(`no encoder for ${table}`);
      return e;
    };
    return { events: await of('events'), grants: await of('grants') };
  } finally {
    await close();
  }
}

const enc = await encoders();
const events = Array.from({ length: ROWS }, (_, i) => event(i));
const grants = Array.from({ length: ROWS }, (_, i) => {
  const r = grantRows({ key: `ns${i % 20}/key-${i % 5000}`, class: 'c1', holder: `spiffe://corp/h${i % 300}`, rev: 1000 + i * 5, at: 1_764_400_000_000 + i });
  return { ...r.open, term: '5', timeline: 1 };
});
const ways = {
  before: (e: RowBinaryEncoder, rows: readonly object[]): number => {
    const fit = rows.filter((r) => outOfRangeBefore(r) === undefined);
    return e.encode(fit).length;
  },
  now: (e: RowBinaryEncoder, rows: readonly object[]): number => {
    let left = 0;
    return e.encode(rows, () => (left += 1)).length + left;
  },
};
heading(`finding the rows the store cannot take, ${ROWS.toLocaleString('en-US')} rows × ${ROUNDS} rounds per table and way`);
for (const [table, e, rows] of [
  ['events', enc.events, events],
  ['grants', enc.grants, grants],
] as const) {
  const cpu = { before: 0, now: 0 };
  if (ways.before(e, rows) !== ways.now(e, rows)) throw new Error(`${table}: the two ways encode different bytes`);
  for (let round = 0; round < ROUNDS + 3; round++) {
    for (const way of round % 2 ? (['before', 'now'] as const) : (['now', 'before'] as const)) {
      const t = process.cpuUsage();
      ways[way](e, rows);
      const used = process.cpuUsage(t);
      if (round >= 3) cpu[way] += used.user + used.system; // three warm-up rounds
    }
  }
  report({
    name: `${table} rows checked + encoded, CPU per row`,
    value: cpu.now / (ROUNDS * ROWS),
    unit: 'µs',
    baselineName: 'range check, then encode (before)',
    baseline: cpu.before / (ROUNDS * ROWS),
    higherIsBetter: false,
  });
}
