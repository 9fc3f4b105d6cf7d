// The leader writes /sys/clock { at } about once a second: the time anchors
// that bracket the commit time of events without a wall time of their own
// (expiries). Only the elected tailer runs one.
import type { Etcd3 } from 'etcd3';
import { PREFIX } from '../core/keyspace.js';
import type { Logger } from '../core/logger.js';

export class ClockWriter {
  readonly #client: Etcd3;
  readonly #intervalMs: number;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #failures = 0;

  constructor(client: Etcd3, log: Logger, intervalMs = 1_000) {
    this.#client = client;
    this.#log = log;
    this.#intervalMs = intervalMs;
  }

  /** Writes the clock now; resolves with the revision of the write. */
  async tick(): Promise<bigint> {
    const res = await this.#client.put(PREFIX.clock).value(JSON.stringify({ at: Date.now() })).exec();
    return BigInt(res.header.revision);
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    const loop = (): void => {
      if (!this.#running) return;
      this.tick()
        .then(() => {
          if (this.#failures > 0) this.#log.info({ failures: this.#failures }, 'clock writes succeed again');
          this.#failures = 0;
        })
        .catch((err: Error) => {
          this.#failures += 1;
          if (this.#failures === 1 || this.#failures % 30 === 0) this.#log.warn({ err: err.message, failures: this.#failures }, 'clock write failed');
        })
        .finally(() => {
          if (this.#running) this.#timer = setTimeout(loop, this.#intervalMs);
        });
    };
    loop();
  }

  stop(): void {
    this.#running = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
