// One simulated worker process: a stable identity in one namespace, one
// session per class TTL kept alive in the background, a paced loop of
// acquire → hold → release, and now and then a crash (its sessions lapse),
// a session close while holding, or a hold left long enough for operators
// to force-release it.
import { setTimeout as sleep } from 'node:timers/promises';
import type { LockClass } from '../../core/keyspace.js';
import type { Rng } from './rng.js';
import type { SimStats } from './stats.js';
import type { Json, Transport } from './transport.js';
import { pickKey, type SimNamespace } from './workload.js';

/** Keys held right now, for the operators to pick force-release targets from. */
export class HoldBoard {
  readonly holds = new Map<string, { worker: number; since: number; className: string }>();
}

interface Session {
  id: string;
  ttlSeconds: number;
  keepalive: NodeJS.Timeout;
}

export interface WorkerOptions {
  index: number;
  identity: string;
  token: string;
  ns: SimNamespace;
  rng: Rng;
  api: Transport;
  stats: SimStats;
  board: HoldBoard;
  /** This worker's mean gap between acquires, ms. */
  meanGapMs: number;
  until: number;
}

export class SimWorker {
  readonly #o: WorkerOptions;
  readonly #sessions = new Map<number, Session>();

  constructor(options: WorkerOptions) {
    this.#o = options;
  }

  async run(): Promise<void> {
    const { rng, until } = this.#o;
    // Start staggered so the fleet does not arrive in one burst.
    await sleep(rng.int(0, Math.min(2_000, this.#o.meanGapMs)));
    // Open-loop arrivals: the next acquire is due at a Poisson time whatever
    // the last one cost, so the fleet keeps its rate while some workers wait.
    let due = Date.now();
    while (Date.now() < until) {
      await this.#cycle();
      due = Math.max(due + rng.exp(this.#o.meanGapMs), Date.now() - this.#o.meanGapMs);
      await sleep(Math.min(Math.max(0, due - Date.now()), Math.max(0, until - Date.now())));
    }
    await this.#closeAll();
  }

  async #session(lockClass: LockClass): Promise<Session | undefined> {
    const ttl = lockClass.ttlSeconds;
    const existing = this.#sessions.get(ttl);
    if (existing) return existing;
    const res = await this.#o.api.request('POST', '/v1/sessions', this.#o.token, { ttlSeconds: ttl });
    if (res.status !== 200 && res.status !== 201) {
      this.#o.stats.inc(`session create failed (${res.status})`);
      return undefined;
    }
    this.#o.stats.inc('sessions created');
    const id = String(res.body.id);
    const keepalive = setInterval(() => void this.#keepalive(ttl, id), (ttl * 1000) / 3);
    keepalive.unref();
    const session = { id, ttlSeconds: ttl, keepalive };
    this.#sessions.set(ttl, session);
    return session;
  }

  async #keepalive(ttl: number, id: string): Promise<void> {
    const res = await this.#o.api.request('POST', `/v1/sessions/${id}/keepalive`, this.#o.token);
    if (res.status === 200) return this.#o.stats.inc('keepalives');
    this.#o.stats.inc(`keepalive failed (${res.status})`);
    if (res.status === 404) this.#drop(ttl); // expired (or revoked by a force-release): open a new one next time
  }

  #drop(ttl: number): void {
    const s = this.#sessions.get(ttl);
    if (!s) return;
    clearInterval(s.keepalive);
    this.#sessions.delete(ttl);
  }

  async #cycle(): Promise<void> {
    const { rng, ns, api, stats, board, token } = this.#o;
    const lockClass = rng.weighted(ns.classes.map((c) => [c.lockClass, c.weight] as const));
    const key = pickKey(rng, ns);
    const waitMs = rng.weighted([
      [0, 2],
      [250, 3],
      [1_000, 3],
      [3_000, lockClass.fairness === 'durable' ? 4 : 1],
    ] as const);
    const holdMs = Math.round(rng.exp(150)) + 10;
    const ending = rng.weighted([
      ['release', 87],
      ['crash', 2],
      ['close', 4],
      ['linger', 7],
    ] as const);
    const session = await this.#session(lockClass);
    if (!session) return;

    const t0 = performance.now();
    const res = await api.request('POST', '/v1/locks/acquire', token, { key, session: session.id, class: lockClass.name, waitMs });
    stats.acquireMs.push(performance.now() - t0);
    stats.inc('acquire requests');
    if (res.status !== 200) return this.#refused(res.status, res.body, lockClass, session);
    const unprotected = res.body.unprotected === true;
    stats.inc(unprotected ? 'grants unprotected (token 0)' : 'grants');
    stats.granted(lockClass.name, unprotected);
    if (Number(res.body.waitMs) > 0 && lockClass.fairness === 'durable') stats.inc('grants after a durable-queue wait');
    else if (Number(res.body.waitMs) > 0) stats.inc('grants after waiting');
    board.holds.set(key, { worker: this.#o.index, since: Date.now(), className: lockClass.name });

    if (ending === 'crash') {
      // The process dies holding the lock: no release, no keepalive. Its
      // sessions lapse after their TTL; it comes back once they have.
      stats.inc('crashes (sessions left to expire)');
      const longest = Math.max(...[...this.#sessions.values()].map((s) => s.ttlSeconds));
      for (const ttl of [...this.#sessions.keys()]) this.#drop(ttl);
      board.holds.delete(key);
      await sleep(Math.min(longest * 1000 + 1_500, Math.max(0, this.#o.until - Date.now())));
      return;
    }
    await sleep(Math.min(ending === 'linger' ? rng.int(4_000, 12_000) : holdMs, Math.max(0, this.#o.until - Date.now() + 1_000)));
    if (ending === 'close') {
      const closed = await api.request('DELETE', `/v1/sessions/${session.id}`, token);
      stats.inc(closed.status === 200 ? 'session closes while holding' : `session close failed (${closed.status})`);
      this.#drop(session.ttlSeconds);
      board.holds.delete(key);
      return;
    }
    const rel = await api.request('POST', '/v1/locks/release', token, { key, session: session.id, token: res.body.token });
    if (board.holds.get(key)?.worker === this.#o.index) board.holds.delete(key);
    if (rel.status === 200) stats.inc('releases');
    else if (rel.body.error === 'LOCKAUDIT_ERR_LOCK_NOT_HOLDER') stats.inc('releases fenced out (force-released or expired)');
    else if (rel.status === 404) {
      stats.inc('releases after session loss');
      this.#drop(session.ttlSeconds);
    } else stats.inc(`release failed (${rel.status})`);
  }

  #refused(status: number, body: Json, lockClass: LockClass, session: Session): void {
    const code = String(body.error ?? status);
    const label: Record<string, string> = {
      LOCKAUDIT_ERR_LOCK_NOT_GRANTED: 'not granted in time (409)',
      LOCKAUDIT_ERR_QUORUM_LOST: 'refused: quorum lost (503)',
      LOCKAUDIT_ERR_LOCK_SEALED: 'refused: sealed (503)',
      LOCKAUDIT_ERR_SESSION_NOT_FOUND: 'refused: session gone (404)',
      LOCKAUDIT_ERR_LOCK_ALREADY_HELD: 'refused: already held by this session',
    };
    this.#o.stats.inc(label[code] ?? `acquire failed ${status} ${code}`);
    if (code === 'LOCKAUDIT_ERR_SESSION_NOT_FOUND') this.#drop(session.ttlSeconds);
    void lockClass;
  }

  async #closeAll(): Promise<void> {
    for (const [ttl, s] of [...this.#sessions.entries()]) {
      this.#drop(ttl);
      await this.#o.api.request('DELETE', `/v1/sessions/${s.id}`, this.#o.token);
    }
  }
}
