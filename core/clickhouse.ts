// The audit store: one @clickhouse/client, embedded (chdb) or a server, and
// the same code above it. Every statement names its tables as
// {db:Identifier}.<table> because the chdb connection ignores the client's
// `database` option; `db` is bound on every call so SQL never concatenates it.
import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
type ClientOptions = NonNullable<Parameters<typeof createClient>[0]>;
import { createChdbConnection } from 'chdb/connection';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { ClickHouseTarget } from './config.js';
import { rowBinaryEncoder, type ColumnSpec, type RowBinaryEncoder } from './rowBinary.js';

type Params = Record<string, unknown>;

export interface InsertOptions {
  settings?: ClickHouseSettings;
  /**
   * Send the rows as RowBinaryWithDefaults (core/rowBinary.ts) instead of
   * JSONEachRow: the same values, no JSON to build or parse. Embedded only
   * (a server keeps JSONEachRow: the binary body needs `exec`, untested
   * here); a table with a column type the encoder does not write also stays
   * on JSONEachRow. A value a column cannot take throws a RowEncodeError
   * whose `type` is the ClickHouse error type it stands for.
   */
  binary?: boolean;
}

// The file name of a binary insert is ours (a UUID in our own temp dir) and FROM INFILE takes only a literal.
const SAFE_PATH = /^[A-Za-z0-9/._-]+$/;

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

  constructor(target: ClickHouseTarget) {
    this.target = target;
    this.database = target.database;
    if (target.mode === 'embedded') {
      mkdirSync(target.path, { recursive: true });
      // chdb types its connection against @clickhouse/client-common, which
      // @clickhouse/client 1.23 vendors as its own copy: same shape, two types.
      const connection = createChdbConnection({ path: target.path }) as unknown as NonNullable<ClientOptions['connection']>;
      this.client = createClient({ connection, clickhouse_settings: SETTINGS });
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
    const encoder = options.binary && this.target.mode === 'embedded' ? await this.#encoder(table) : undefined;
    if (!encoder) {
      await this.client.insert({ table: `${this.database}.${table}`, values: values as T[], format: 'JSONEachRow', clickhouse_settings: options.settings });
      return;
    }
    const body = encoder.encode(values);
    // chdb's connection passes an insert body as a UTF-8 string (binary bytes would be mangled), so the
    // bytes go through a file of our own that ClickHouse reads with FROM INFILE — into the table itself,
    // so "default" fields get the table's own defaults.
    this.#insertDir ??= mkdtempSync(path.join(tmpdir(), 'lockaudit-inserts-'));
    const file = path.join(this.#insertDir, `${randomUUID()}.rowbinary`);
    if (!SAFE_PATH.test(file)) throw new Error(`binary insert: unexpected temp path ${file}`);
    await writeFile(file, body);
    try {
      await this.command(`INSERT INTO {db:Identifier}.{table:Identifier} FROM INFILE '${file}' FORMAT RowBinaryWithDefaults`, { table }, options.settings);
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
    this.#closed ??= this.client.close().finally(() => {
      if (this.#insertDir) rmSync(this.#insertDir, { recursive: true, force: true });
    });
    return this.#closed;
  }
}
