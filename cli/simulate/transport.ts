// How the simulator reaches the API: real HTTP to --url, or in-process
// through fastify's inject (no port, same routes, same validation).
import type { App } from '../../api/app.js';

export type Json = Record<string, unknown>;
export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface Transport {
  request(method: Method, path: string, token: string, body?: unknown): Promise<{ status: number; body: Json }>;
}

function parse(text: string): Json {
  try {
    const value = text ? (JSON.parse(text) as unknown) : {};
    return typeof value === 'object' && value !== null ? (value as Json) : { value };
  } catch {
    return { text };
  }
}

export class HttpTransport implements Transport {
  constructor(
    readonly baseUrl: string,
    readonly timeoutMs = 30_000,
  ) {}

  async request(method: Method, path: string, token: string, body?: unknown): Promise<{ status: number; body: Json }> {
    try {
      const res = await fetch(new URL(path, this.baseUrl), {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      return { status: res.status, body: parse(await res.text()) };
    } catch (err) {
      // A transport failure is an outcome to count, not a crash of the fleet.
      return { status: 0, body: { error: 'TRANSPORT', message: (err as Error).message } };
    }
  }
}

export class InjectTransport implements Transport {
  constructor(readonly app: App) {}

  async request(method: Method, path: string, token: string, body?: unknown): Promise<{ status: number; body: Json }> {
    const res = await this.app.inject({
      method,
      url: path,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, body: parse(res.body) };
  }
}
