// Reads what lockaudit stored, after the platform has stopped (embedded
// ClickHouse is one process's at a time): `node --import tsx
// test/chaos/storeDump.ts OUT_DIR`. It opens the data dir the way
// core/clickhouse.ts does (@clickhouse/client over a chdb connection) and
// writes store.json in a shape of the checker's own (so kept histories stay
// readable when the schema moves). 64-bit values come back as decimal
// strings (output_format_json_quote_64bit_integers).
//
// The events are read WITHOUT `FINAL`: every distinct content a
// (cluster, revision, key) ever had, each with the newest ingested_at it was
// written at (and the highest leadership term, sql/110). The checker derives
// the FINAL view itself (highest term, then newest, wins) and
// names a key whose contents differ (a flip) — under FINAL that evidence is
// merged away before anyone can look.
import { closeSync, openSync, writeSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';
import { loadConfig } from '../../core/config.js';
import { readJsonLines } from './jsonLines.js';

export interface StoredEvent {
  revision: string;
  key: string;
  event_type: string;
  op: string;
  token: string;
  epoch: number;
  value: string;
  unprotected: number;
  /** The newest ingested_at this content was written at, by its highest term (FINAL keeps the highest (term, ingested_at)). */
  ingested_at?: string;
  /** The highest leadership term this content was written under (sql/110), where the store keeps one. */
  term?: string;
  /** The timeline (restore generation) the row belongs to, where the store keeps one. */
  timeline?: number;
  [column: string]: unknown;
}

/** A captured row a restore rolled back, in whichever form the store keeps it (moved aside or marked). */
export interface RolledBackRow {
  /** The restore (1, 2, …) that rolled it back. */
  generation: number;
  revision: string;
  key: string;
  event_type: string;
  /** '' when the store kept no op (the row then says put or delete by its value). */
  op: string;
  value: string;
}

export interface StoredGap {
  from_revision: string;
  to_revision: string;
  reason: string;
  detected_at: string;
  /** 'compaction' or 'restore' (older stores: '' — the reason's words decide). */
  kind?: string;
  /** The restore's generation, for restore gaps. */
  generation?: number;
}

export interface StoredGrant {
  key: string;
  token: string;
  epoch: number;
  grant_revision: string;
  end_kind: string;
  end_revision: string;
  unprotected: number;
  start_known: number;
  granted_at: string;
  ended_at: string | null;
  timeline?: number;
  /** sql/065: the restore that rolled the grant back (0: none), and from which timeline on it is no longer the current account (0: it is). */
  rolled_back_by?: number;
  superseded_by?: number;
  /** sql/040: api, or foreign (written around the lock API), where the store keeps it. */
  origin?: string;
}

/** Where a dump keeps its events (one JSON line each) when store.json names it. */
export const EVENTS_FILE = 'store-events.jsonl';
/** Where a dump keeps its grants (one JSON line each) when store.json names it. */
export const GRANTS_FILE = 'store-grants.jsonl';
/** Revisions a dump reads per query (events by revision, grants by grant revision). */
const EVENT_PAGE_REVISIONS = 50_000n;

/** Rows as JSON lines, 5 000 at a time: one string of a whole page outgrew V8's longest (a mass expiry's values). */
function writeLines(fd: number, rows: readonly unknown[]): void {
  for (let i = 0; i < rows.length; i += 5_000)
    writeSync(
      fd,
      `${rows
        .slice(i, i + 5_000)
        .map((r) => JSON.stringify(r))
        .join('\n')}\n`,
    );
}

/** store.json with its events and grants: inline (older dumps, the kept fixture) or from the files beside it, read a chunk at a time. */
export function readStoreDump(dir: string, text: string): StoreDump {
  const store = JSON.parse(text) as StoreDump & { eventsFile?: string; grantsFile?: string };
  const events = store.eventsFile ? readJsonLines<StoredEvent>(path.join(dir, store.eventsFile)) : store.events;
  const grants = store.grantsFile ? readJsonLines<StoredGrant>(path.join(dir, store.grantsFile)) : store.grants;
  return { ...store, events, grants };
}

export interface StoreDump {
  /** Distinct contents of every put/delete row, not merged (see the header). */
  events: StoredEvent[];
  rolledBack: RolledBackRow[];
  gaps: StoredGap[];
  quarantine: Array<{ revision: string; key: string; reason: string }>;
  grants: StoredGrant[];
  checkpoint: string;
  eventColumns: string[];
}

async function main(out: string): Promise<void> {
  const config = loadConfig();
  if (config.clickhouse.mode !== 'embedded') throw new Error('storeDump reads the embedded store; with a server, point the checker at it instead');
  // Our own client on the data dir, not lockaudit's AuditStore: the checker reads what is on disk.
  const connection = createChdbConnection({ path: config.clickhouse.path }) as unknown as NonNullable<
    NonNullable<Parameters<typeof createClient>[0]>['connection']
  >;
  const client = createClient({ connection, clickhouse_settings: { output_format_json_quote_64bit_integers: 1 } });
  const database = config.clickhouse.database;
  const rows = async <T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> =>
    (await client.query({ query, query_params: { db: database, ...params }, format: 'JSONEachRow' })).json<T>();
  const columnsOf = async (table: string): Promise<string[]> =>
    (await rows<{ name: string }>('SELECT name FROM system.columns WHERE database = {db:String} AND table = {t:String}', { t: table })).map((c) => c.name);
  try {
    const cluster = config.etcd.clusters[0]?.name ?? 'local';
    const p = { cluster };
    const eventColumns = await columnsOf('events');
    // Columns that legitimately differ between two writes of one change (when, and an expiry's estimate) are left out of "content".
    // (`replace_version` is (term, ingested_at) itself, sql/110.)
    const volatile = new Set(['ingested_at', 'term', 'replace_version', 'wall_time', 'time_estimated', 'time_error_ms', 'cluster']);
    const content = eventColumns.filter((c) => !volatile.has(c));
    // Read a revision range at a time and written out as it comes: one query's JSON for a 30-minute realistic run
    // outgrew a 16 GB heap (seed 43). GROUP BY includes revision, so ranges split no group.
    const eventsQuery = `SELECT ${content.map((c) => `\`${c}\``).join(', ')}, ${eventColumns.includes('term') ? 'toString(argMax(ingested_at, (term, ingested_at))) AS ingested_at, toString(max(term)) AS term' : 'toString(max(ingested_at)) AS ingested_at'} FROM {db:Identifier}.events WHERE cluster = {cluster:String} AND op IN ('put', 'delete') AND revision >= {lo:UInt64} AND revision < {hi:UInt64} GROUP BY ${content.map((c) => `\`${c}\``).join(', ')} ORDER BY revision, key SETTINGS prefer_column_name_to_alias = 1`; // `AS term` must not shadow the column inside argMax
    const pages = async (table: string, column: string, query: string, file: string): Promise<void> => {
      const [span] = await rows<{ lo: string; hi: string }>(
        `SELECT toString(min(${column})) AS lo, toString(max(${column})) AS hi FROM {db:Identifier}.${table} WHERE cluster = {cluster:String}`,
        p,
      );
      const fd = openSync(path.join(out, file), 'w');
      try {
        for (let lo = BigInt(span?.lo ?? '1'); lo <= BigInt(span?.hi ?? '0'); lo += EVENT_PAGE_REVISIONS)
          writeLines(fd, await rows(query, { ...p, lo: lo.toString(), hi: (lo + EVENT_PAGE_REVISIONS).toString() }));
      } finally {
        closeSync(fd);
      }
    };
    // Read a revision range at a time and written out as it comes: one query's JSON for a 30-minute realistic run
    // outgrew a 16 GB heap (seed 43). GROUP BY includes revision, so ranges split no group.
    await pages('events', 'revision', eventsQuery, EVENTS_FILE);
    const rolledBackColumns = await columnsOf('rolled_back_events');
    const rolledBack = rolledBackColumns.length
      ? await rows<RolledBackRow>(
          // A snapshot's rows (op snapshot, or spool) are no change of etcd's; a table without `op` says so by their type.
          `SELECT DISTINCT generation, revision, key, event_type, ${rolledBackColumns.includes('op') ? 'toString(op)' : "''"} AS op, value FROM {db:Identifier}.rolled_back_events WHERE cluster = {cluster:String} AND ${rolledBackColumns.includes('op') ? "op IN ('put', 'delete')" : "event_type NOT IN ('snapshot-hold', 'unprotected-grant')"} ORDER BY generation, revision, key`,
          p,
        )
      : [];
    const gapColumns = await columnsOf('gaps');
    const gaps = await rows<StoredGap>(
      `SELECT from_revision, to_revision, reason, toString(detected_at) AS detected_at${gapColumns.includes('kind') ? ', kind' : ''}${gapColumns.includes('generation') ? ', generation' : ''} FROM {db:Identifier}.gaps FINAL WHERE cluster = {cluster:String} ORDER BY detected_at, from_revision`,
      p,
    );
    const grantColumns = await columnsOf('grants');
    const optional = ['timeline', 'rolled_back_by', 'superseded_by', 'origin'].filter((c) => grantColumns.includes(c));
    const dump: StoreDump = {
      events: [],
      rolledBack,
      gaps,
      quarantine: await rows('SELECT revision, key, reason FROM {db:Identifier}.quarantine FINAL WHERE cluster = {cluster:String}', p),
      grants: [],
      checkpoint: (await rows<{ r: string }>('SELECT max(revision) AS r FROM {db:Identifier}.checkpoints WHERE cluster = {cluster:String}', p))[0]?.r ?? '0',
      eventColumns,
    };
    const grantsQuery = `SELECT key, token, epoch, grant_revision, end_kind, end_revision, unprotected, start_known, toString(granted_at) AS granted_at, toString(ended_at) AS ended_at${optional.map((c) => `, ${c}`).join('')} FROM {db:Identifier}.grants FINAL WHERE cluster = {cluster:String} AND grant_revision >= {lo:UInt64} AND grant_revision < {hi:UInt64}`;
    await pages('grants', 'grant_revision', grantsQuery, GRANTS_FILE);
    // The events and grants one JSON line each, in files of their own: a 30-minute run at the realistic load holds more
    // than one JavaScript string can (JSON.stringify of the whole dump: "Invalid string length"). store.json names them.
    writeFileSync(path.join(out, 'store.json'), JSON.stringify({ ...dump, eventsFile: EVENTS_FILE, grantsFile: GRANTS_FILE }));
  } finally {
    await client.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = process.argv[2];
  if (!out) throw new Error('usage: storeDump.ts OUT_DIR');
  await main(out);
  process.exit(0);
}
