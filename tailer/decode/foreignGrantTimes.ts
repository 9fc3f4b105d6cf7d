// The grant time of a hold written around the lock API (origin foreign), asked
// of etcd before the (pure) decoder runs. Such a hold's `at` is whatever its
// writer chose: taken as the grant time, a hold claiming 2286 was invisible
// to every "up to now" search and export, one claiming 2020 fell into a day
// long exported (investigator review). Its grant time is instead the last
// proven /sys/clock write at or before its grant revision (core/proof.ts):
// a lower bound of its commit that etcd's history gives the same whenever it is
// asked — at the put, and again at the delete, which must name the same grant
// time (grants_by_key is sorted by it). Compacted by the delete: the grant time
// the put was given, from this runner's memory or the store.
import type { Etcd3 } from 'etcd3';
import { PREFIX } from '../../core/keyspace.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { loadSql } from '../../platform/sql.js';
import { clockAtOrBefore, isReadable } from '../watch/etcdReads.js';
import type { ClockPoint } from '../clock/clockBracket.js';

const STORED = loadSql('tailer/sql/foreignGrantTime.sql');
/** Grant times remembered per runner (a hold put and deleted within one catch-up is asked once). */
const REMEMBERED = 4096;

/** Grant revision → grant time (ms) of the foreign holds a revision puts or deletes. */
export type ForeignGrantTimes = ReadonlyMap<string, number>;

export class ForeignGrantClock {
  readonly #client: Etcd3;
  readonly #store: AuditStore;
  readonly #cluster: string;
  readonly #secret: Buffer;
  readonly #known = new Map<string, number | null>();

  constructor(client: Etcd3, store: AuditStore, cluster: string, secret: Buffer) {
    this.#client = client;
    this.#store = store;
    this.#cluster = cluster;
    this.#secret = secret;
  }

  /**
   * The grant times of these foreign holds (their key under /l/, grant revision, and whether this is their end);
   * those with none are left out. `clockAt` answers as clockAtOrBefore does (a window's streamClock.ts).
   */
  async of(
    holds: ReadonlyArray<{ key: string; grantRevision: string; end: boolean }>,
    clockAt?: (revision: bigint) => Promise<ClockPoint | undefined>,
  ): Promise<ForeignGrantTimes> {
    const out = new Map<string, number>();
    const ask = clockAt ?? ((revision: bigint) => clockAtOrBefore(this.#client, revision, this.#secret));
    for (const h of holds) {
      const at = await this.#grantTime(h.key, h.grantRevision, h.end, ask);
      if (at !== undefined) out.set(h.grantRevision, at);
    }
    return out;
  }

  async #grantTime(key: string, grantRevision: string, end: boolean, ask: (revision: bigint) => Promise<ClockPoint | undefined>): Promise<number | undefined> {
    const known = this.#known.get(grantRevision);
    if (known !== undefined) return known ?? undefined;
    const revision = BigInt(grantRevision);
    let at = (await ask(revision))?.at;
    // Only an end whose put etcd no longer holds asks the store (what the put was given then); a put with no
    // proven clock before it keeps its claimed time, and so will its end (remembered, or asked of etcd alike).
    if (at === undefined && end && !(await isReadable(this.#client, revision))) {
      const [row] = await this.#store.rows<{ ms: string }>(STORED.text, { cluster: this.#cluster, key: key.slice(PREFIX.hold.length), grantRevision });
      at = row ? Number(row.ms) : undefined;
    }
    if (this.#known.size >= REMEMBERED) this.#known.delete(this.#known.keys().next().value as string);
    this.#known.set(grantRevision, at ?? null);
    return at;
  }
}
