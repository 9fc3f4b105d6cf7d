// The realistic profile's throughput pump: loops that acquire and release at once, as fast as the lock API answers,
// each on its own identity and session, over keys of their own (no contention: the point is the API's rate, so that
// restore detection, the lease witness and fail-open run under the load a busy fleet makes). The simulator's fleet,
// whose workers hold for hundreds of ms and wait on hot keys, reaches only a few dozen cycles a second on its own.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Stack } from './stack.js';

/** How many pump identities the run's token file holds (the most loops a run can use). */
export const PUMP_CLIENTS = 64;

const CLASS = 'sim-payments-ledger'; // fenced, TTL 15 s: registered by the simulator's first round
const KEYS_PER_LOOP = 16;

export class Pump {
  cycles = 0;
  refused = 0;
  #stopped = false;
  #loops: Promise<void>[] = [];
  #started = 0;
  #stoppedAt = 0;

  constructor(
    readonly stack: Stack,
    readonly clients: string[],
    readonly options: { seed: number; loops: number },
  ) {}

  start(): void {
    this.#started = Date.now();
    for (let i = 0; i < Math.min(this.options.loops, this.clients.length); i++) this.#loops.push(this.#loop(i));
  }

  async stop(): Promise<void> {
    if (!this.#stoppedAt) this.#stoppedAt = Date.now();
    this.#stopped = true;
    await Promise.allSettled(this.#loops);
  }

  /** Acquire+release cycles a second over the pump's life so far. */
  get rate(): number {
    const seconds = ((this.#stoppedAt || Date.now()) - this.#started) / 1000;
    return seconds > 0 ? this.cycles / seconds : 0;
  }

  async #loop(i: number): Promise<void> {
    const client = this.clients[i] as string;
    let session: string | undefined;
    let keepalive: NodeJS.Timeout | undefined;
    const drop = (): void => {
      if (keepalive) clearInterval(keepalive);
      keepalive = undefined;
      session = undefined;
    };
    for (let n = 0; !this.#stopped; n++) {
      if (!session) {
        const res = await this.stack.api('POST', '/v1/sessions', client, { ttlSeconds: 15 });
        if (res.status !== 200 && res.status !== 201) {
          this.refused++;
          await sleep(500);
          continue;
        }
        const id = String(res.body.id);
        session = id;
        keepalive = setInterval(() => void this.stack.api('POST', `/v1/sessions/${id}/keepalive`, client), 5_000);
        keepalive.unref();
      }
      const key = `payments/pump-${this.options.seed}-${i}-${n % KEYS_PER_LOOP}`;
      const got = await this.stack.api('POST', '/v1/locks/acquire', client, { key, session, class: CLASS, waitMs: 0 });
      if (got.status !== 200) {
        this.refused++;
        if (got.body.error === 'LOCKAUDIT_ERR_SESSION_NOT_FOUND') drop();
        await sleep(200);
        continue;
      }
      const rel = await this.stack.api('POST', '/v1/locks/release', client, { key, session, token: got.body.token });
      if (rel.status === 200) this.cycles++;
      else {
        this.refused++;
        if (rel.status === 404) drop();
      }
    }
    if (session) await this.stack.api('DELETE', `/v1/sessions/${session}`, client);
    drop();
  }
}
