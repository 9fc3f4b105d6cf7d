// The investigator commands' client for a running platform's API. The URL is
// --url, else LOCKAUDIT_URL, else http://LOCKAUDIT_HOST:LOCKAUDIT_PORT; the
// token is --api-token, else LOCKAUDIT_API_TOKEN. The token travels in the
// Authorization header only — never in a URL, a message or the output.
// Every failure becomes one ApiCallError: the API's error code and message,
// or why the API could not be asked.
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../core/config.js';

/** One failed call, printed as one line: the API's error code and message, or (no code) why the API could not be asked. */
export class ApiCallError extends Error {
  constructor(
    readonly code: string | undefined,
    message: string,
    /** The HTTP status; 0 when the API was not asked or did not answer. */
    readonly status: number,
    /** Wrong input (a flag, the environment, or a 400 from the API): exit 2, like commander's own errors. */
    readonly usage = status === 400,
  ) {
    super(message);
    this.name = 'ApiCallError';
  }

  /** The one line the CLI prints (without its `lockaudit: ` prefix). */
  get line(): string {
    return this.code ? `${this.code} (HTTP ${this.status}): ${this.message}` : this.message;
  }
}

export interface ApiTarget {
  url: string;
  token: string;
}

/** Where and as whom: flags first, then the environment, then the configured host and port. */
export function resolveTarget(flags: { url?: string; token?: string }, env: NodeJS.ProcessEnv = process.env): ApiTarget {
  const token = flags.token || env.LOCKAUDIT_API_TOKEN;
  if (!token)
    throw new ApiCallError(
      undefined,
      'no API token: set LOCKAUDIT_API_TOKEN (or pass --api-token) to a token with the investigator role (`lockaudit token create`)',
      0,
      true,
    );
  const raw = flags.url || env.LOCKAUDIT_URL || configuredUrl();
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ApiCallError(undefined, `--url / LOCKAUDIT_URL: "${raw}" is not a URL (e.g. http://127.0.0.1:8080)`, 0, true);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ApiCallError(undefined, `--url / LOCKAUDIT_URL: "${raw}" is not an http(s) URL`, 0, true);
  if (url.username || url.password)
    throw new ApiCallError(undefined, '--url / LOCKAUDIT_URL: credentials do not belong in the URL; the token goes in LOCKAUDIT_API_TOKEN', 0, true);
  return { url: url.href.replace(/\/+$/, ''), token };
}

/** The platform this machine's configuration runs (LOCKAUDIT_HOST, LOCKAUDIT_PORT). */
function configuredUrl(): string {
  const { host, port } = loadConfig();
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

export type Query = Record<string, string | number | undefined>;

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

interface ErrorBody {
  error?: unknown;
  message?: unknown;
}

/** One line: newlines and other control characters out of a message the server wrote. */
export const oneLine = (text: string): string => text.replace(/[\x00-\x1f\x7f]+/g, ' ').trim();

export class ApiClient {
  readonly #target: ApiTarget;
  readonly #maxRateWaits: number;

  constructor(target: ApiTarget, options: { maxRateWaits?: number } = {}) {
    this.#target = target;
    this.#maxRateWaits = options.maxRateWaits ?? 3;
  }

  get url(): string {
    return this.#target.url;
  }

  /** GET a route; a 429 is waited out (Retry-After, at most 60 s, a few times), any other non-2xx throws ApiCallError. */
  get(route: string, query: Query = {}, accept = 'application/json'): Promise<Answer> {
    return this.#send('GET', route, query, accept);
  }

  /** POST a JSON body (what must not go in a URL, e.g. a fencing token) and read JSON back; errors as get. */
  async postJson<T>(route: string, body: unknown): Promise<T> {
    return this.#json<T>(route, await this.#send('POST', route, {}, 'application/json', body));
  }

  async #send(method: 'GET' | 'POST', route: string, query: Query, accept: string, body?: unknown): Promise<Answer> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const href = `${this.#target.url}${route}${params.size ? `?${params.toString()}` : ''}`;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#target.token}`,
      accept,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    };
    for (let waits = 0; ; waits++) {
      let res: Response;
      try {
        res = await fetch(href, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        throw new ApiCallError(
          undefined,
          `the API at ${this.#target.url} did not answer (${oneLine(cause?.code ?? cause?.message ?? (err as Error).message)}); is the platform running there? (--url, LOCKAUDIT_URL or LOCKAUDIT_HOST/PORT)`,
          0,
        );
      }
      const text = await res.text();
      if (res.ok) return { status: res.status, headers: res.headers, text };
      const retryAfter = Number(res.headers.get('retry-after'));
      if (res.status === 429 && waits < this.#maxRateWaits && Number.isFinite(retryAfter) && retryAfter >= 0 && retryAfter <= 60) {
        process.stderr.write(`lockaudit: the API's report rate limit was reached; waiting ${retryAfter} s\n`);
        await sleep(retryAfter * 1000);
        continue;
      }
      throw errorOf(res.status, text);
    }
  }

  /** GET a JSON route. */
  async getJson<T>(route: string, query: Query = {}): Promise<T> {
    return this.#json<T>(route, await this.get(route, query));
  }

  #json<T>(route: string, answer: Answer): T {
    try {
      return JSON.parse(answer.text) as T;
    } catch {
      throw new ApiCallError(
        undefined,
        `the API at ${this.#target.url} answered ${route} with something that is not JSON; is that a lockaudit API?`,
        answer.status,
      );
    }
  }
}

function errorOf(status: number, text: string): ApiCallError {
  let body: ErrorBody = {};
  try {
    body = JSON.parse(text) as ErrorBody;
  } catch {
    // not the API's error body (a proxy in between?): the status says what there is
  }
  const code = typeof body.error === 'string' ? body.error : `HTTP_${status}`;
  const message = typeof body.message === 'string' ? body.message : oneLine(text).slice(0, 200) || 'no message';
  return new ApiCallError(oneLine(code), oneLine(message), status);
}
