// The store process (issue 41): embedded ClickHouse (chdb) belongs to one
// process, so for the roles to run as separate processes over one store, one
// process owns chdb and serves the part of ClickHouse's HTTP interface that
// @clickhouse/client uses. Every role then talks to it exactly as it would to
// a ClickHouse server (LOCKAUDIT_CLICKHOUSE_URL): the same client, the same
// bound parameters, the same errors. What chdb-server does, in this project's
// own process and tests.
//
// The interface served (what @clickhouse/client sends):
//   GET /ping                         → "Ok.\n"
//   POST /?<params>  body = SQL       → query, command, exec: the result bytes
//   POST /?query=<INSERT … FORMAT F>  body = data   → an insert (any format,
//        RowBinary too: the bytes go to chdb through a file, never a string)
//   URL params: param_<name> (bound parameters), query_id, default_format;
//   database, session and compression flags are accepted and ignored (every
//   query of the project names its database); anything else is a setting.
//   Errors: HTTP 500 (403 for a failed login) with ClickHouse's own body
//   ("Code: N. DB::Exception: … (NAME)") and X-ClickHouse-Exception-Code, which
//   the client turns into the same ClickHouseError it gets from a server.
//   A request whose client goes away cancels its query.
// It listens on loopback (or a unix socket) and asks for a password (Basic
// auth or X-ClickHouse-User/Key), as a ClickHouse server does.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { createChdbConnection } from 'chdb/connection';
import { loadChdb } from '../core/clickhouse.js';

export interface StoreServerOptions {
  /** chdb's data directory (the embedded store's). */
  path: string;
  /** The password every request must carry (any user name). */
  password: string;
  /** TCP port on 127.0.0.1 (0: any free one), or a unix socket path. */
  listen: { port: number } | { socket: string };
}

export interface StoreServer {
  /** http://127.0.0.1:<port> (TCP) or the socket path. */
  readonly address: string;
  close(): Promise<void>;
}

type Connection = ReturnType<typeof createChdbConnection>;

/** URL parameters of @clickhouse/client that are no setting of the engine. */
const CLIENT_PARAMS = new Set([
  'query',
  'database',
  'query_id',
  'default_format',
  'session_id',
  'session_timeout',
  'session_check',
  'compress',
  'decompress',
  'role',
  'user',
  'password',
]);
const INSERT = /^\s*(INSERT\s+INTO\s+[\s\S]+?)\s+FORMAT\s+([A-Za-z][A-Za-z0-9]*)\s*$/i;
/** A login failure, as ClickHouse answers it (code 516, AUTHENTICATION_FAILED). */
const AUTH_FAILED = 'Code: 516. DB::Exception: Authentication failed: password is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED)';

export async function startStoreServer(options: StoreServerOptions): Promise<StoreServer> {
  mkdirSync(options.path, { recursive: true });
  // Queries and inserts on connections of their own: an insert never holds up a read (as in core/clickhouse.ts).
  const connect = loadChdb();
  const queries: Connection = connect({ path: options.path });
  const inserts: Connection = connect({ path: options.path });
  const spool = path.join(tmpdir(), `lockaudit-store-${process.pid}-${randomUUID().slice(0, 8)}`);
  mkdirSync(spool, { recursive: true, mode: 0o700 });
  const expected = Buffer.from(options.password, 'utf8');

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => fail(res, err));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://store');
    if (req.method === 'GET' && url.pathname === '/ping') return void res.writeHead(200, { 'content-type': 'text/plain; charset=UTF-8' }).end('Ok.\n');
    if (!authorized(req, url, expected))
      return void res.writeHead(403, { 'x-clickhouse-exception-code': '516', 'content-type': 'text/plain; charset=UTF-8' }).end(`${AUTH_FAILED}\n`);
    if (req.method !== 'POST' && req.method !== 'GET') return void res.writeHead(405).end();
    const body = await readBody(req);
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(); // the client went away: its query need not run on
    });
    const queryId = url.searchParams.get('query_id') || randomUUID();
    const query_params: Record<string, unknown> = {};
    const clickhouse_settings: Record<string, string> = {};
    const inUrl = url.searchParams.get('query');
    // With both, the URL has the statement and the body its data (an insert); else one of them is the statement.
    const isInsert = inUrl !== null && body.length > 0;
    const sql = inUrl ?? body.toString('utf8');
    const types = placeholderTypes(sql);
    for (const [k, v] of url.searchParams) {
      if (k.startsWith('param_')) query_params[k.slice(6)] = paramValue(types.get(k.slice(6)), v);
      else if (!CLIENT_PARAMS.has(k)) clickhouse_settings[k] = v;
    }
    const format = url.searchParams.get('default_format');
    if (format) clickhouse_settings.default_format = format;
    const headers = { 'x-clickhouse-query-id': queryId, 'x-clickhouse-timezone': 'UTC' };
    if (isInsert) {
      // An insert: the statement in the URL, the data in the body — through a file, so binary formats stay bytes.
      const m = INSERT.exec(sql);
      if (!m)
        throw Object.assign(new Error(`Code: 62. DB::Exception: the store takes data in the body only for INSERT INTO … FORMAT …. (SYNTAX_ERROR)`), {
          clickhouseCode: 62,
        });
      const file = path.join(spool, `${randomUUID()}.bin`);
      writeFileSync(file, body, { mode: 0o600 });
      try {
        const r = await inserts.command({
          query: `${m[1]} FROM INFILE '${file}' FORMAT ${m[2]}`,
          query_id: queryId,
          query_params,
          clickhouse_settings,
          abort_signal: abort.signal,
        });
        res.writeHead(200, { ...headers, 'x-clickhouse-summary': JSON.stringify(r.summary ?? {}) }).end();
      } finally {
        rmSync(file, { force: true });
      }
      return;
    }
    const r = await queries.exec({ query: sql, query_id: queryId, query_params, clickhouse_settings, abort_signal: abort.signal });
    const chunks: Buffer[] = [];
    for await (const c of r.stream) chunks.push(c as Buffer);
    res
      .writeHead(200, { ...headers, 'x-clickhouse-summary': JSON.stringify(r.summary ?? {}), ...(format ? { 'x-clickhouse-format': format } : {}) })
      .end(Buffer.concat(chunks));
  }

  if ('socket' in options.listen) {
    const socket = options.listen.socket;
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(socket, resolve));
  } else {
    const port = options.listen.port;
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  }
  const where = server.address();
  const address = typeof where === 'string' ? where : `http://127.0.0.1:${where?.port ?? 0}`;
  let closing: Promise<void> | undefined;
  return {
    address,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await queries.close();
        await inserts.close();
        rmSync(spool, { recursive: true, force: true });
      })()),
  };
}

function authorized(req: IncomingMessage, url: URL, expected: Buffer): boolean {
  let given: string | undefined;
  const basic = /^Basic\s+(.+)$/i.exec(req.headers.authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1] as string, 'base64').toString('utf8');
    given = decoded.slice(decoded.indexOf(':') + 1);
  } else if (typeof req.headers['x-clickhouse-key'] === 'string') given = req.headers['x-clickhouse-key'];
  else given = url.searchParams.get('password') ?? undefined;
  if (given === undefined) return false;
  const got = Buffer.from(given, 'utf8');
  return got.length === expected.length && timingSafeEqual(got, expected);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

/** ClickHouse's answer to a failed query: its message as the body (with its code and type), its code in a header. */
function fail(res: ServerResponse, err: unknown): void {
  const e = err as { message?: string; clickhouseCode?: number; code?: unknown; type?: unknown };
  const code = e.clickhouseCode ?? (typeof e.code === 'string' && /^\d+$/.test(e.code) ? Number(e.code) : 1001);
  const type = typeof e.type === 'string' && /^[A-Z][A-Z0-9_]*$/.test(e.type) ? e.type : 'STD_EXCEPTION';
  const message = String(e.message ?? err);
  const body = /^Code: \d+\./.test(message) ? message : `Code: ${code}. DB::Exception: ${message} (${type})`;
  if (res.headersSent) return void res.destroy();
  res.writeHead(500, { 'x-clickhouse-exception-code': String(code), 'content-type': 'text/plain; charset=UTF-8' }).end(`${body}\n`);
}

/** Each `{name:Type}` placeholder's type in a statement. */
function placeholderTypes(sql: string): Map<string, string> {
  return new Map([...sql.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g)].map((m) => [m[1] as string, (m[2] as string).trim()]));
}

/**
 * A parameter's value as chdb's binder takes it, from the text the HTTP interface takes: a string type's comes
 * escaped (unescaped here); an array's is ClickHouse's array text (`['a','b\\'c']`, not escaped again), given to the binder
 * as the array itself, as the project's own embedded calls do (the binder would escape the text once more); any other
 * type's text as it is.
 */
function paramValue(type: string | undefined, text: string): unknown {
  if (text === '\\N') return null; // @clickhouse/client's NULL
  if (stringLike(type)) return unescapeParam(text);
  // An array of strings is parsed (chdb's binder quotes each element itself); any other array goes as its text,
  // which the binder hands to the engine as is — parsed, its numbers came back as strings the engine refused
  // (`[1796451754496]` for an Array(Int64): the two-API-process test).
  if (type !== undefined && /^Array\(/.test(type)) return stringLike(arrayElement(type)) ? parseArrayText(text) : text;
  return text;
}

/** ClickHouse's text form of an array of scalars: quoted strings (backslash escapes), bare values, NULL, nested arrays. */
export function parseArrayText(text: string): unknown[] {
  let i = 0;
  const fail = (): never => {
    throw Object.assign(new Error(`Cannot read array from text: ${JSON.stringify(text.slice(0, 80))}`), {
      clickhouseCode: 130,
      type: 'CANNOT_READ_ARRAY_FROM_TEXT',
    });
  };
  const skip = (): void => {
    while (text[i] === ' ') i += 1;
  };
  const value = (): unknown => {
    skip();
    if (text[i] === '[') return array();
    if (text[i] === "'") {
      let out = '';
      for (i += 1; i < text.length && text[i] !== "'"; i += 1) out += text[i] === '\\' ? unescapeParam(text.slice(i, (i += 1) + 1)) : text[i];
      if (text[i] !== "'") fail();
      i += 1;
      return out;
    }
    const start = i;
    while (i < text.length && text[i] !== ',' && text[i] !== ']') i += 1;
    const bare = text.slice(start, i).trim();
    if (!bare) fail();
    return bare === 'NULL' ? null : bare;
  };
  const array = (): unknown[] => {
    if (text[i] !== '[') fail();
    i += 1;
    const out: unknown[] = [];
    skip();
    if (text[i] === ']') {
      i += 1;
      return out;
    }
    for (;;) {
      out.push(value());
      skip();
      if (text[i] === ',') i += 1;
      else if (text[i] === ']') {
        i += 1;
        return out;
      } else fail();
    }
  };
  skip();
  const out = array();
  skip();
  if (i !== text.length) fail();
  return out;
}

/** The element type of a (nested) array type: `Array(Array(String))` → `String`. */
function arrayElement(type: string): string {
  let t = type.trim();
  while (/^Array\(.*\)$/.test(t)) t = t.slice('Array('.length, -1).trim();
  return t;
}

/** A string type, whose HTTP parameter value comes escaped (a composite's text form carries its own quoting). */
function stringLike(type: string | undefined): boolean {
  return type !== undefined && /^(?:(?:Nullable|LowCardinality)\()*(?:String|FixedString\(\d+\)|Identifier)\)*$/.test(type);
}

/**
 * A string parameter's value as ClickHouse's HTTP interface takes it: in the escaped text format (a backslash
 * escapes the next character; \n, \t and the like are control characters), which @clickhouse/client writes.
 * chdb's binder takes the value itself.
 */
export function unescapeParam(value: string): string {
  const controls: Record<string, string> = { b: '\b', f: '\f', r: '\r', n: '\n', t: '\t', '0': '\0', a: '\x07', v: '\v' };
  return value.replace(/\\([\s\S])/g, (_, c: string) => controls[c] ?? c);
}
