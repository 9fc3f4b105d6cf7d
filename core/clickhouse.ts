// The audit store: one @clickhouse/client, embedded (chdb) or a server, and
// the same code above it. Every statement names its tables as
// {db:Identifier}.<table> because the chdb connection ignores the client's
// `database` option; `db` is bound on every call so SQL never concatenates it.
// One exception, embedded only: the binary inserts (the tailer's sink) run on
// a second chdb connection with no bound parameters (issue 22 item 3). chdb
// runs every query with bound parameters one at a time, process-wide (its
// parameter binding is not safe under concurrency), and one connection runs
// one statement at a time: a catch-up's inserts queued every report behind
// them (/v1/grants p99 10–100× idle). A parameter-free statement on a
// connection of its own runs beside the reports; the identifiers it names are
// checked (IDENTIFIER) and the file name is ours (SAFE_PATH). Likewise the
// operators' status reads (statusRows: /v1/tailers), whose queries bind
// nothing but the database: on a third connection they answer while a report
// or the tailer's own reads hold chdb's parameter queue.
import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
type ClientOptions = NonNullable<Parameters<typeof createClient>[0]>;
import type { createChdbConnection as CreateChdbConnection } from 'chdb/connection';
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { ClickHouseTarget } from './config.js';
import { embeddedHolder, servedStore } from './embeddedOwner.js';
import { LockauditError } from './errors.js';
import { rowBinaryEncoder, type ColumnSpec, type RowBinaryEncoder } from './rowBinary.js';

type Params = Record<string, unknown>;

export interface InsertOptions {
  settings?: ClickHouseSettings;
  /**
   * Send the rows as RowBinaryWithDefaults (core/rowBinary.ts) instead of
   * JSONEachRow: the same values, no JSON to build or parse. Embedded, through
   * a file; to a server or the store process (platform/storeServer.ts), as the
   * body of an `exec` (test/integration/storeConformance.test.ts). A table with
   * a column type the encoder does not write stays on JSONEachRow. A value a column cannot take throws a RowEncodeError
   * whose `type` is the ClickHouse error type it stands for.
   */
  binary?: boolean;
  /**
   * With `binary`: a row one of whose values its column cannot take (or ClickHouse would change: rowBinary.ts) is
   * left out of the insert and handed here with the reason; the other rows are inserted. A table with no encoder
   * for its columns is refused then (nothing would check its rows).
   */
  rejected?: (row: object, reason: string) => void;
}

// The file name of a binary insert is ours (a UUID in our own temp dir) and FROM INFILE takes only a literal.
const SAFE_PATH = /^[A-Za-z0-9/._-]+$/;
// A database or table name a parameter-free statement may name (the config schema's database pattern).
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export interface StoreOptions {
  /**
   * Embedded only: run binary inserts on a second chdb connection without
   * bound parameters, so they never hold up queries (see the header).
   * Default true; false puts them back in line with every other query (the
   * catchUpProgress bench's same-run baseline).
   */
  ingestConnection?: boolean;
  /**
   * Settings of every binary insert on that connection. Default
   * INGEST_SETTINGS (one thread each: measured against none and against
   * `priority` by the catchUpProgress bench, docs/performance.md).
   */
  ingestSettings?: ClickHouseSettings;
  /**
   * Embedded only: run statusRows on a connection of their own without bound
   * parameters (see the header). Default true; false runs them in line with
   * every other query (the catchUpProgress bench's same-run baseline).
   */
  statusConnection?: boolean;
}

/**
 * The tailer's inserts run on one thread each: running beside the reports,
 * they otherwise take every core from them (same-run /v1/grants p99 during a
 * catch-up ÷ idle: 4.66 with the default threads, 2.77 with one, 3.63 with
 * `priority` 10; catch-up itself was not slower).
 */
/**
 * chdb's connection factory, loaded on first use: its engine library is hundreds of megabytes of memory in every
 * process that imports it, and only the process that holds the embedded store needs it — a role or CLI command
 * that reaches the store through that process (core/embeddedOwner.ts), or a ClickHouse server, never loads it.
 */
export function loadChdb(): typeof CreateChdbConnection {
  const load = createRequire(import.meta.url);
  return (load('chdb/connection') as { createChdbConnection: typeof CreateChdbConnection }).createChdbConnection;
}

export const INGEST_SETTINGS: ClickHouseSettings = { max_threads: 1, max_insert_threads: '1' };

// 64-bit integers (tokens, revisions) must arrive as strings: chdb's default is bare numbers.
const SETTINGS: ClickHouseSettings = {
  output_format_json_quote_64bit_integers: 1,
  date_time_input_format: 'best_effort',
};

export class AuditStore {
  readonly client: ClickHouseClient;
  readonly database: string;
  readonly target: ClickHouseTarget;
  #closed: Promise<void> | undefined;
  /** Per table: its RowBinary encoder (from DESCRIBE), or undefined to stay on JSONEachRow. */
  readonly #encoders = new Map<string, Promise<RowBinaryEncoder | undefined>>();
  #insertDir: string | undefined;
  /** Embedded: the connection binary inserts run on (StoreOptions.ingestConnection), or undefined to use `client`. */
  readonly #ingest: ClickHouseClient | undefined;
  readonly #ingestSettings: ClickHouseSettings | undefined;
  /** Embedded: the connection statusRows run on (StoreOptions.statusConnection), or undefined to use `client`. */
  readonly #status: ClickHouseClient | undefined;

  constructor(configured: ClickHouseTarget, options: StoreOptions = {}) {
    // An embedded store another process holds and serves (core/embeddedOwner.ts): through that process, as a server.
    const served = configured.mode === 'embedded' ? servedStore(configured.path) : undefined;
    const target: ClickHouseTarget = served
      ? { mode: 'server', url: served.url, database: configured.database, user: 'default', password: served.password }
      : configured;
    this.target = target;
    this.database = target.database;
    this.#ingestSettings = options.ingestSettings ?? INGEST_SETTINGS;
    if (target.mode === 'embedded') {
      mkdirSync(target.path, { recursive: true });
      assertNotHeld(target.path);
      // chdb types its connection against @clickhouse/client-common, which
      // @clickhouse/client 1.23 vendors as its own copy: same shape, two types.
      const createChdbConnection = loadChdb();
      const connect = () => createChdbConnection({ path: target.path }) as unknown as NonNullable<ClientOptions['connection']>;
      this.client = createClient({ connection: connect(), clickhouse_settings: SETTINGS });
      if ((options.ingestConnection ?? true) || (options.statusConnection ?? true)) {
        if (!IDENTIFIER.test(target.database)) throw new Error(`clickhouse.database: ${JSON.stringify(target.database)} is not a plain identifier`);
      }
      if (options.statusConnection ?? true) this.#status = createClient({ connection: connect(), clickhouse_settings: SETTINGS });
      if (options.ingestConnection ?? true) {
        this.#ingest = createClient({ connection: connect(), clickhouse_settings: SETTINGS });
      }
    } else {
      this.client = createClient({
        url: target.url,
        username: target.user,
        password: target.password,
        clickhouse_settings: SETTINGS,
        request_timeout: 60_000,
      });
    }
  }

  #params(params?: Params): Params {
    return { db: this.database, ...params };
  }

  /** Runs a query and returns its rows (JSONEachRow; 64-bit integers as strings). */
  async rows<T>(query: string, params?: Params, settings?: ClickHouseSettings): Promise<T[]> {
    const result = await this.client.query({ query, query_params: this.#params(params), format: 'JSONEachRow', clickhouse_settings: settings });
    return result.json<T>();
  }

  /**
   * Runs a query that binds nothing but `{db:Identifier}` (an operator's
   * status read) and returns its rows like `rows`. Embedded, on the status
   * connection with the checked database name written in and nothing bound,
   * so it does not wait in chdb's parameter queue (see the header). Any other
   * placeholder in the query is refused: it would be bound nowhere.
   */
  async statusRows<T>(query: string, settings?: ClickHouseSettings): Promise<T[]> {
    const rest = query.replaceAll('{db:Identifier}', '');
    if (/\{[A-Za-z_][A-Za-z0-9_]*:/.test(rest)) throw new Error('statusRows: the query binds a parameter other than {db:Identifier}');
    if (!this.#status) return this.rows<T>(query, {}, settings);
    const result = await this.#status.query({
      query: query.replaceAll('{db:Identifier}', `\`${this.database}\``),
      format: 'JSONEachRow',
      clickhouse_settings: settings,
    });
    return result.json<T>();
  }

  /**
   * Runs a query whose output is a binary format (Parquet, ArrowStream…) and
   * returns its bytes as a stream. `exec`, not `query`: the chdb connection's
   * `query(...).stream()` splits binary output on newlines.
   */
  async bytes(query: string, format: string, params?: Params, settings?: ClickHouseSettings): Promise<Readable> {
    const rs = await this.client.exec({ query: `${query}\nFORMAT ${format}`, query_params: this.#params(params), clickhouse_settings: settings });
    return rs.stream;
  }

  /** Runs a statement with no result (DDL, INSERT … SELECT). */
  async command(query: string, params?: Params, settings?: ClickHouseSettings): Promise<void> {
    await this.client.command({ query, query_params: this.#params(params), clickhouse_settings: settings });
  }

  /** Inserts rows into `<db>.<table>`, as JSONEachRow or (options.binary) RowBinaryWithDefaults. Resolves when ClickHouse has the rows. */
  async insert<T extends object>(table: string, values: readonly T[], options: InsertOptions = {}): Promise<void> {
    if (values.length === 0) return;
    const encoder = options.binary && IDENTIFIER.test(table) ? await this.#encoder(table) : undefined;
    const rejected = options.rejected;
    if (!encoder) {
      if (rejected) throw new Error(`insert into ${table}: no RowBinary encoder for its columns, so its rows cannot be checked`);
      await this.client.insert({ table: `${this.database}.${table}`, values: values as T[], format: 'JSONEachRow', clickhouse_settings: options.settings });
      return;
    }
    const body = encoder.encode(values, rejected ? (i, err) => rejected(values[i] as object, err.message) : undefined);
    if (body.length === 0) return; // every row left out
    if (this.target.mode === 'server') {
      // A server (or the store process) takes the bytes as the body, the statement in the URL: exec with values.
      const r = await this.client.exec({
        query: `INSERT INTO \`${this.database}\`.\`${table}\` FORMAT RowBinaryWithDefaults`,
        values: Readable.from([body]),
        clickhouse_settings: options.settings,
      });
      // Read to its end (empty): a response left unread closes its socket early and the client warns of ECONNRESET.
      r.stream.resume();
      await finished(r.stream);
      return;
    }
    // chdb's connection passes an insert body as a UTF-8 string (binary bytes would be mangled), so the
    // bytes go through a file of our own that ClickHouse reads with FROM INFILE — into the table itself,
    // so "default" fields get the table's own defaults.
    this.#insertDir ??= mkdtempSync(path.join(tmpdir(), 'lockaudit-inserts-'));
    const file = path.join(this.#insertDir, `${randomUUID()}.rowbinary`);
    if (!SAFE_PATH.test(file)) throw new Error(`binary insert: unexpected temp path ${file}`);
    await writeFile(file, body);
    try {
      if (this.#ingest && IDENTIFIER.test(table)) {
        // No bound parameters: chdb would run it in line with every other query (see the header).
        const settings = { ...this.#ingestSettings, ...options.settings };
        await this.#ingest.command({
          query: `INSERT INTO \`${this.database}\`.\`${table}\` FROM INFILE '${file}' FORMAT RowBinaryWithDefaults`,
          clickhouse_settings: settings,
        });
      } else {
        await this.command(`INSERT INTO {db:Identifier}.{table:Identifier} FROM INFILE '${file}' FORMAT RowBinaryWithDefaults`, { table }, options.settings);
      }
    } finally {
      await unlink(file).catch(() => undefined);
    }
  }

  /** The table's insertable columns (DESCRIBE, in table order) as an encoder; undefined when a type is not one it writes. */
  #encoder(table: string): Promise<RowBinaryEncoder | undefined> {
    let e = this.#encoders.get(table);
    if (!e) {
      e = this.rows<ColumnSpec & { default_type: string }>('DESCRIBE TABLE {db:Identifier}.{table:Identifier}', { table }).then((cols) =>
        rowBinaryEncoder(cols.filter((c) => c.default_type === '' || c.default_type === 'DEFAULT')),
      );
      e.catch(() => this.#encoders.delete(table)); // asked again next time
      this.#encoders.set(table, e);
    }
    return e;
  }

  async ping(): Promise<boolean> {
    const r = await this.client.ping();
    return r.success;
  }

  /** Idempotent. */
  close(): Promise<void> {
    this.#closed ??= Promise.all([this.client.close(), this.#ingest?.close(), this.#status?.close()])
      .then(() => undefined)
      .finally(() => {
        if (this.#insertDir) rmSync(this.#insertDir, { recursive: true, force: true });
      });
    return this.#closed;
  }
}

/**
 * Embedded ClickHouse lets one process open a data dir (it locks `status`, in
 * which it writes its pid). Asked before opening, so that a second process —
 * a CLI command while the platform runs — fails with one line naming the
 * process that holds it, instead of chdb's own lock error and stack trace.
 */
function assertNotHeld(dataPath: string): void {
  const pid = embeddedHolder(dataPath);
  if (pid === undefined) return;
  throw new LockauditError(
    'LOCKAUDIT_ERR_STORE_BUSY',
    `the running process pid ${pid} holds the embedded ClickHouse in ${dataPath} (one process at a time): stop it first, or ask it through its API (lockaudit grants, state, diff … with --url and --api-token; token … with --admin-token; GET /readyz for its health)`,
  );
}
