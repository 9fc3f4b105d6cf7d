// The audit store: one @clickhouse/client, embedded (chdb) or a server, and
// the same code above it. Every statement names its tables as
// {db:Identifier}.<table> because the chdb connection ignores the client's
// `database` option; `db` is bound on every call so SQL never concatenates it.
import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
type ClientOptions = NonNullable<Parameters<typeof createClient>[0]>;
import { createChdbConnection } from 'chdb/connection';
import { mkdirSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { ClickHouseTarget } from './config.js';

type Params = Record<string, unknown>;

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

  /** Inserts rows into `<db>.<table>` as JSONEachRow. Resolves when ClickHouse has the rows. */
  async insert<T extends object>(table: string, values: readonly T[], settings?: ClickHouseSettings): Promise<void> {
    if (values.length === 0) return;
    await this.client.insert({ table: `${this.database}.${table}`, values: values as T[], format: 'JSONEachRow', clickhouse_settings: settings });
  }

  async ping(): Promise<boolean> {
    const r = await this.client.ping();
    return r.success;
  }

  /** Idempotent. */
  close(): Promise<void> {
    this.#closed ??= this.client.close();
    return this.#closed;
  }
}
