// Reads what lockaudit stored, after the platform has stopped (embedded
// ClickHouse is one process's at a time): `node --import tsx
// test/chaos/storeDump.ts OUT_DIR`. It opens the data dir the way
// core/clickhouse.ts does (@clickhouse/client over a chdb connection) and
// writes one JSON file per table the checker reads. 64-bit values come back
// as decimal strings (output_format_json_quote_64bit_integers).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';
import { loadConfig } from '../../core/config.js';

export interface StoredEvent {
  revision: string;
  key: string;
  event_type: string;
  op: string;
  token: string;
  epoch: number;
  value: string;
  unprotected: number;
  [column: string]: unknown;
}

export interface StoredGap {
  from_revision: string;
  to_revision: string;
  reason: string;
  detected_at: string;
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
}

export interface StoreDump {
  events: StoredEvent[];
  eventRowsWithoutFinal: number;
  gaps: StoredGap[];
  quarantine: Array<{ revision: string; key: string; reason: string }>;
  grants: StoredGrant[];
  checkpoint: string;
  eventColumns: string[];
}

const out = process.argv[2];
if (!out) throw new Error('usage: storeDump.ts OUT_DIR');
const config = loadConfig();
if (config.clickhouse.mode !== 'embedded') throw new Error('storeDump reads the embedded store; with a server, point the checker at it instead');
// Our own client on the data dir, not lockaudit's AuditStore: the checker reads what is on disk.
const connection = createChdbConnection({ path: config.clickhouse.path }) as unknown as NonNullable<NonNullable<Parameters<typeof createClient>[0]>['connection']>;
const client = createClient({ connection, clickhouse_settings: { output_format_json_quote_64bit_integers: 1 } });
const database = config.clickhouse.database;
const store = {
  rows: async <T>(query: string, params: Record<string, unknown>): Promise<T[]> => (await client.query({ query, query_params: { db: database, ...params }, format: 'JSONEachRow' })).json<T>(),
};
try {
  const cluster = config.etcd.clusters[0]?.name ?? 'local';
  const p = { cluster };
  const columns = (await store.rows<{ name: string }>("SELECT name FROM system.columns WHERE database = {db:String} AND table = 'events'", {})).map((c) => c.name);
  const dump: StoreDump = {
    // Every row of the log under FINAL, the whole row (the checker decides what matters).
    events: await store.rows<StoredEvent>("SELECT * EXCEPT (ingested_at) FROM {db:Identifier}.events FINAL WHERE cluster = {cluster:String} AND op IN ('put', 'delete') ORDER BY revision, key", p),
    eventRowsWithoutFinal: Number((await store.rows<{ n: string }>("SELECT count() AS n FROM {db:Identifier}.events WHERE cluster = {cluster:String} AND op IN ('put', 'delete')", p))[0]?.n ?? 0),
    gaps: await store.rows<StoredGap>('SELECT from_revision, to_revision, reason, toString(detected_at) AS detected_at FROM {db:Identifier}.gaps FINAL WHERE cluster = {cluster:String} ORDER BY from_revision', p),
    quarantine: await store.rows('SELECT revision, key, reason FROM {db:Identifier}.quarantine FINAL WHERE cluster = {cluster:String}', p),
    grants: await store.rows<StoredGrant>('SELECT key, token, epoch, grant_revision, end_kind, end_revision, unprotected, start_known, toString(granted_at) AS granted_at, toString(ended_at) AS ended_at FROM {db:Identifier}.grants FINAL WHERE cluster = {cluster:String}', p),
    checkpoint: (await store.rows<{ r: string }>('SELECT max(revision) AS r FROM {db:Identifier}.checkpoints WHERE cluster = {cluster:String}', p))[0]?.r ?? '0',
    eventColumns: columns,
  };
  writeFileSync(path.join(out, 'store.json'), JSON.stringify(dump));
} finally {
  await client.close();
}
process.exit(0);
