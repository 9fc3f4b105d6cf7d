// The leader writes /sys/clock { at, mac } about once a second: the time
// anchors that bracket the commit time of events without a wall time of their
// own (expiries). Only the elected tailer runs one. The MAC (core/proof.ts
// clockMac) binds the time to the one put that makes the key's next version,
// so anyone with etcdctl can neither forge a time nor copy a proven one back;
// the tailer takes only proven writes as anchors (tailer/decode/decoder.ts,
// tailer/watch/etcdReads.ts).
import type { Etcd3 } from 'etcd3';
import { PREFIX } from '../../core/keyspace.js';
import { clockMac } from '../../core/proof.js';
import type { Logger } from '../../core/logger.js';
import { sleep } from '../../platform/retry.js';

const CLOCK = Buffer.from(PREFIX.clock);

/** Attempts at a signed write while others write the key too (an insider's loop of puts or deletes), each after a short pause. */
const ATTEMPTS = 5;

/**
 * One clock write of now, as the elected tailer; resolves with its revision. With a secret: the put is made only
 * while /sys/clock is still at the version read (a txn), signed for the version it makes. When the key is missing
 * (a new cluster, or deleted by hand) it is first created with an unsigned value, which is no anchor: its create
 * revision is that put's own, unknown before it is made. When someone else writes
 * the key under every attempt, resolves with the revision of their latest write instead (a change the tailer
 * captures, so a catch-up can still end on it; no anchor is written this time, and their writes are alarmed).
 */
export async function writeClock(client: Etcd3, secret: Buffer | undefined): Promise<bigint> {
  if (!secret)
    return BigInt(
      (
        await client
          .put(PREFIX.clock)
          .value(JSON.stringify({ at: Date.now() }))
          .exec()
      ).header.revision,
    );
  let seen = 0n;
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    if (attempt > 0) await sleep(5 + Math.floor(Math.random() * 20 * attempt));
    const [kv] = (await client.kv.range({ key: CLOCK })).kvs;
    if (!kv) {
      const res = await client
        .if(PREFIX.clock, 'Create', '==', 0)
        .then(client.put(PREFIX.clock).value(JSON.stringify({ at: Date.now() })))
        .commit();
      seen = BigInt(res.header.revision);
      continue;
    }
    seen = BigInt(kv.mod_revision);
    const at = Date.now();
    const next = (BigInt(kv.version) + 1n).toString();
    const res = await client
      .if(PREFIX.clock, 'Create', '==', kv.create_revision)
      .and(PREFIX.clock, 'Version', '==', kv.version)
      .then(client.put(PREFIX.clock).value(JSON.stringify({ at, mac: clockMac(secret, at, kv.create_revision, next) })))
      .commit();
    if (res.succeeded) return BigInt(res.header.revision);
  }
  return seen;
}

export class ClockWriter {
  readonly #client: Etcd3;
  readonly #secret: Buffer | undefined;
  readonly #intervalMs: number;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #failures = 0;

  constructor(client: Etcd3, log: Logger, intervalMs = 1_000, secret?: Buffer) {
    this.#client = client;
    this.#secret = secret;
    this.#log = log;
    this.#intervalMs = intervalMs;
  }

  /** Writes the clock now; resolves with the revision of the write. */
  async tick(): Promise<bigint> {
    return writeClock(this.#client, this.#secret);
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
