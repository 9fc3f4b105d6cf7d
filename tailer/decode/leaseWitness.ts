// Evidence that a hold's lease was alive, gathered while the tailer follows
// etcd live. A marker-less hold delete is an expiry only if its lease was
// gone at that moment, but etcd keeps no lease history: a lease revoked (or
// let lapse) right after a hand delete looks gone by the time anyone asks.
// So, for holds put in the live window, the witness asks the lease's
// remaining TTL once (and again before that runs out, while the lease still
// has holds): etcd cannot expire a lease before the TTL it reported has run
// from when it was asked, so a delete noticed before then was no expiry —
// whatever happened to the lease afterwards (a later "gone" takes nothing
// back; a question etcd did not answer is asked again). A delete noticed later, or of a
// hold the witness never saw put live, falls back to asking etcd now.
//
// The witness follows etcd on a watch of its own (follow), from the moment
// the replica starts, not from where capture has got to: capture lags in a
// catch-up, a slow start or while a restore is recorded, and a hold put,
// deleted by hand and its lease revoked in that time was read as an expiry
// (30-minute chaos run). The same watch notes by when etcd had committed each
// revision (a watch delivers a change only after its commit), so a delete
// read late is judged by that moment, not by the time it was read.
import { EtcdLeaseInvalidError, type Etcd3, type IWatchResponse } from 'etcd3';
import { PREFIX, prefixEnd } from '../../core/keyspace.js';
import type { Logger } from '../../core/logger.js';
import { NO_LEASE } from './leaseLiveness.js';
import type { RevisionChanges } from '../types.js';
import { etcdText } from '../../core/etcdText.js';

/**
 * Where evidence outlives the process (tailer/decode/leaseEvidence.ts): saved as it is heard, loaded as a run starts —
 * a tailer killed between a hold's put and its hand delete + revoke leaves the next one what it knew.
 */
export interface EvidenceLog {
  load(nowMs: number): Promise<Array<{ lease: string; aliveUntil: number }>>;
  save(rows: ReadonlyArray<{ lease: string; aliveUntil: number }>): Promise<void>;
}

export interface LeaseWitnessOptions {
  /** Saved evidence; absent: memory only. */
  log?: EvidenceLog;
  /** Leases followed at most (the oldest evidence is dropped beyond). */
  maxLeases?: number;
  /** TTL questions per second at most, for refreshes. */
  refreshPerSecond?: number;
  /** Taken off each bound: etcd reports TTL in whole seconds, and its clock is not ours. */
  marginMs?: number;
}

interface Evidence {
  /**
   * No expiry of the lease is possible before this (ms since the epoch); 0 while unknown. It only ever moves
   * forward: a later answer of "gone" (a revoke right after a hand delete) does not undo what was proven.
   */
  aliveUntil: number;
  /** etcd answered that it no longer has the lease: nothing more to ask. */
  gone: boolean;
  /** The lease's granted TTL (s), to refresh well before `aliveUntil`. */
  grantedTtl: number;
  /** Hold keys on the lease seen put live, with the put's revision. */
  holds: Map<string, bigint>;
  asking?: Promise<void>;
}

/** A lease's remaining TTL, or undefined when etcd no longer has it. */
export type AskTtl = (lease: string) => Promise<{ ttl: number; grantedTtl: number } | undefined>;

export function etcdTtl(client: Etcd3): AskTtl {
  return async (lease) => {
    try {
      const res = await client.leaseClient.leaseTimeToLive({ ID: lease, keys: false });
      const ttl = Number(res.TTL);
      return ttl > 0 ? { ttl, grantedTtl: Number(res.grantedTTL) } : undefined;
    } catch (err) {
      if (err instanceof EtcdLeaseInvalidError) return undefined;
      throw err;
    }
  };
}

/** Every hold etcd has now (keys only, paged): what a run's witness starts from. */
export async function currentHolds(client: Etcd3, pageSize = 5_000): Promise<Array<{ key: string; lease: string; revision: bigint }>> {
  return (await holdsNow(client, pageSize)).holds;
}

/** Evidence kept past its end: a delete committed before the end may be read much later (catch-up, a restore recorded). */
const RETAIN_MS = 15 * 60_000;
/** Commit-time samples kept (one per watch response). */
const MAX_SAMPLES = 100_000;

/** Every hold etcd has now (keys only, paged), and the revision the first page was read at. */
export async function holdsNow(client: Etcd3, pageSize = 5_000): Promise<{ holds: Array<{ key: string; lease: string; revision: bigint }>; revision: bigint }> {
  const holds: Array<{ key: string; lease: string; revision: bigint }> = [];
  const end = Buffer.from(prefixEnd(PREFIX.hold));
  let from = Buffer.from(PREFIX.hold);
  let revision: bigint | undefined;
  for (;;) {
    const res = await client.kv.range({
      key: from,
      range_end: end,
      keys_only: true,
      limit: pageSize,
      ...(revision !== undefined ? { revision: revision.toString() } : {}),
    });
    revision ??= BigInt(res.header.revision);
    for (const kv of res.kvs) holds.push({ key: etcdText(kv.key), lease: String(kv.lease), revision: BigInt(kv.mod_revision) });
    if (!res.more || res.kvs.length === 0) return { holds, revision };
    from = Buffer.concat([(res.kvs.at(-1) as { key: Buffer }).key, Buffer.from([0])]);
  }
}

export class LeaseWitness {
  readonly #ask: AskTtl;
  readonly #log: Logger | undefined;
  readonly #max: number;
  readonly #perSecond: number;
  readonly #margin: number;
  readonly #leases = new Map<string, Evidence>();
  readonly #evidenceLog: EvidenceLog | undefined;
  /** Evidence heard and not saved yet (lease → alive until). */
  readonly #unsaved = new Map<string, number>();
  #saving: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** By when etcd had committed each revision up to `revision` (ascending; this process's own watch). */
  readonly #committed: Array<{ revision: bigint; at: number }> = [];
  /** Ends the follow's current watch so it reads etcd again (after a restore). */
  #refollow: (() => void) | undefined;

  constructor(ask: AskTtl, log?: Logger, options: LeaseWitnessOptions = {}) {
    this.#ask = ask;
    this.#log = log;
    this.#max = options.maxLeases ?? 20_000;
    this.#perSecond = options.refreshPerSecond ?? 50;
    this.#margin = options.marginMs ?? 1_500;
    this.#evidenceLog = options.log;
  }

  /**
   * Takes in the saved evidence still in the future (this replica's earlier process, or another replica's):
   * a run calls it as it starts, before it reads anything. A load that fails leaves memory as it was.
   */
  async restore(now = Date.now()): Promise<number> {
    if (!this.#evidenceLog) return 0;
    const rows = await this.#evidenceLog.load(now);
    for (const r of rows) {
      const e = this.#leases.get(r.lease);
      if (e) e.aliveUntil = Math.max(e.aliveUntil, r.aliveUntil);
      else if (this.#leases.size < this.#max) this.#leases.set(r.lease, { aliveUntil: r.aliveUntil, gone: false, grantedTtl: 0, holds: new Map() });
    }
    this.#timer ??= setInterval(() => this.#tick(), 1_000).unref();
    return rows.length;
  }

  /** Saves what was heard since the last save (one insert); what fails is kept for the next. */
  async flush(): Promise<void> {
    if (!this.#evidenceLog || this.#unsaved.size === 0) return this.#saving;
    await this.#saving;
    if (this.#unsaved.size === 0) return this.#saving; // a flush that ran meanwhile took them
    const rows = [...this.#unsaved].map(([lease, aliveUntil]) => ({ lease, aliveUntil }));
    this.#unsaved.clear();
    this.#saving = this.#evidenceLog.save(rows).catch((err: Error) => {
      for (const r of rows) if ((this.#unsaved.get(r.lease) ?? 0) < r.aliveUntil) this.#unsaved.set(r.lease, r.aliveUntil);
      this.#log?.warn({ err: err.message, leases: rows.length }, 'lease evidence not saved; kept for the next save');
    });
    await this.#saving;
  }

  /** Leases followed now (for tests and status). */
  get size(): number {
    return this.#leases.size;
  }

  /** A revision of the live window: note the leases of holds put in it (their TTL is asked once, in the background). */
  seenLive(rev: RevisionChanges): void {
    for (const c of rev.changes) if (c.type === 'put' && c.kv.key.startsWith(PREFIX.hold)) this.#notePut(c.kv.key, c.kv.lease || NO_LEASE, rev.revision);
    this.#timer ??= setInterval(() => this.#tick(), 1_000).unref();
  }

  /**
   * The holds etcd has as a run starts (put before it, maybe while no tailer ran): their leases' TTL is
   * asked now, a few at a time, so a hand delete of one of them later is told apart from an expiry too.
   */
  seed(holds: ReadonlyArray<{ key: string; lease: string; revision: bigint }>): void {
    const fresh: Array<[string, Evidence]> = [];
    for (const h of holds) {
      if (h.lease === NO_LEASE || h.lease === '') continue;
      let e = this.#leases.get(h.lease);
      if (!e) {
        if (this.#leases.size >= this.#max) break;
        e = { aliveUntil: 0, gone: false, grantedTtl: 0, holds: new Map() };
        this.#leases.set(h.lease, e);
        fresh.push([h.lease, e]);
      } else if (e.holds.size === 0 && e.grantedTtl === 0 && !e.gone) {
        fresh.push([h.lease, e]); // loaded from the saved evidence: ask now, so it is refreshed in time
      }
      e.holds.set(h.key, h.revision);
    }
    // Bounded concurrency: a run starting over many sessions must not flood etcd.
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < fresh.length) {
        const [lease, e] = fresh[next++] as [string, Evidence];
        this.#refresh(lease, e);
        await e.asking;
      }
    };
    for (let i = 0; i < 8; i++) void worker();
    this.#timer ??= setInterval(() => this.#tick(), 1_000).unref();
  }

  /**
   * Hold deletes of any window: a lease with no hold left seen live is no longer refreshed, but what was proven
   * stays until it runs out (#refreshDue drops it then) — a hold put on the same lease again and deleted by hand at
   * once, the lease revoked before anyone could ask, was still no expiry.
   */
  seenDeletes(rev: RevisionChanges): void {
    for (const c of rev.changes) {
      if (c.type !== 'delete' || !c.kv.key.startsWith(PREFIX.hold) || !c.prev) continue;
      const lease = c.prev.lease || NO_LEASE;
      const e = this.#leases.get(lease);
      const putAt = e?.holds.get(c.kv.key);
      if (!e || putAt === undefined || putAt > rev.revision) continue;
      e.holds.delete(c.kv.key);
    }
  }

  /**
   * True when the lease provably could not have expired yet when its hold's delete was committed: then that delete
   * was no expiry. The commit is bounded by when this witness's watch saw etcd past `revision`; without that, by
   * `now` (it was committed before it was read).
   */
  async outlived(lease: string, now = Date.now(), revision?: bigint): Promise<boolean> {
    const e = this.#leases.get(lease);
    if (!e) return false;
    const seen = revision === undefined ? undefined : this.committedBefore(revision);
    const at = seen !== undefined && seen < now ? seen : now;
    if (e.aliveUntil > at) return true; // evidence only moves forward: no need to wait for a question under way
    await e.asking;
    return e.aliveUntil > at;
  }

  /** etcd had committed every revision up to `revision` by `at` (a watch response's header, as it arrived). */
  committed(revision: bigint, at = Date.now()): void {
    const last = this.#committed.at(-1);
    if (last && revision <= last.revision) {
      if (revision < last.revision)
        this.#committed.length = 0; // revisions went back: etcd was rewound, the old times say nothing
      else return;
    }
    this.#committed.push({ revision, at });
    if (this.#committed.length > MAX_SAMPLES) this.#committed.splice(0, this.#committed.length - MAX_SAMPLES);
  }

  /** The earliest moment known by which `revision` was committed; undefined when this witness never saw that far. */
  committedBefore(revision: bigint): number | undefined {
    const c = this.#committed;
    let lo = 0;
    let hi = c.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((c[mid] as { revision: bigint }).revision < revision) lo = mid + 1;
      else hi = mid;
    }
    return c[lo]?.at;
  }

  /** etcd was restored: revisions are reused, so when they were seen proves nothing now; the follow reads afresh. */
  forgetTimes(): void {
    this.#committed.length = 0;
    this.#refollow?.();
  }

  /**
   * Follows every hold put in etcd from now on, on a watch of its own: the holds etcd has are seeded, then each
   * put is noted (its lease's TTL asked) and each watch response says by when its revision was committed. Runs
   * until stop(); a broken watch is opened again from a fresh read (a restored etcd included).
   */
  follow(client: Etcd3): { stop(): Promise<void> } {
    let stopped = false;
    let cancel: (() => Promise<void>) | undefined;
    let wake: (() => void) | undefined;
    const loop = (async () => {
      while (!stopped) {
        try {
          const now = await holdsNow(client);
          this.committed(now.revision);
          this.seed(now.holds);
          const watcher = await client
            .watch()
            .prefix(PREFIX.hold)
            .startRevision((now.revision + 1n).toString())
            .watcher();
          cancel = () => watcher.cancel();
          await new Promise<void>((resolve) => {
            wake = resolve;
            this.#refollow = resolve;
            watcher.on('data', (res: IWatchResponse) => {
              const at = Date.now();
              for (const ev of res.events) {
                const revision = BigInt(ev.kv.mod_revision);
                this.committed(revision, at);
                if (ev.type === 'Put') this.#notePut(etcdText(ev.kv.key), String(ev.kv.lease), revision);
                else this.#noteDelete(etcdText(ev.kv.key), ev.prev_kv ? String(ev.prev_kv.lease) : undefined, revision);
              }
              this.committed(BigInt(res.header.revision), at);
            });
            watcher.on('error', () => resolve()); // read again, then watch again
          });
          await watcher.cancel().catch(() => undefined);
        } catch (err) {
          this.#log?.debug({ err: (err as Error).message }, 'lease witness: etcd not followed; trying again');
        }
        if (!stopped)
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, 1_000).unref();
          });
      }
    })();
    this.#timer ??= setInterval(() => this.#tick(), 1_000).unref();
    return {
      stop: async () => {
        stopped = true;
        await cancel?.().catch(() => undefined);
        wake?.();
        await loop;
      },
    };
  }

  #notePut(key: string, lease: string, revision: bigint): void {
    if (lease === NO_LEASE || lease === '') return;
    let e = this.#leases.get(lease);
    if (!e) {
      if (this.#leases.size >= this.#max) this.#dropOldest();
      e = { aliveUntil: 0, gone: false, grantedTtl: 0, holds: new Map() };
      this.#leases.set(lease, e);
      this.#refresh(lease, e);
    }
    e.holds.set(key, revision);
  }

  #noteDelete(key: string, lease: string | undefined, revision: bigint): void {
    const e = lease === undefined ? undefined : this.#leases.get(lease);
    const putAt = e?.holds.get(key);
    if (e && putAt !== undefined && putAt <= revision) e.holds.delete(key);
  }

  /** Stops refreshing; what was heard and not saved yet is saved first. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
    this.#leases.clear();
  }

  #refresh(lease: string, e: Evidence): void {
    if (e.asking) return;
    const sent = Date.now(); // the TTL counts from when etcd answered, which is after this
    e.asking = this.#ask(lease)
      .then((answer) => {
        if (!answer) {
          e.gone = true;
          return;
        }
        const until = sent + answer.ttl * 1_000 - this.#margin;
        if (until > e.aliveUntil) {
          e.aliveUntil = until;
          this.#unsaved.set(lease, until);
        }
        e.grantedTtl = answer.grantedTtl;
      })
      .catch((err: Error) => {
        this.#log?.debug({ err: err.message }, 'lease TTL not known (etcd unreachable); its deletes fall back to asking later');
      })
      .finally(() => {
        e.asking = undefined;
      });
  }

  #tick(): void {
    this.#refreshDue();
    void this.flush();
  }

  /**
   * Leases with holds whose evidence runs out within half their TTL, or that etcd has not answered about yet
   * (it was unreachable when first asked), soonest first, within the budget.
   */
  #refreshDue(): void {
    const now = Date.now();
    const due: Array<[string, Evidence]> = [];
    for (const [lease, e] of this.#leases) {
      // Evidence that proves nothing any more: loaded for a lease no hold of this run's view is on, or of a lease
      // etcd no longer has (its holds' deletes may lie in a gap, never seen): kept while a delete committed before
      // its end may still be read (RETAIN_MS), then dropped.
      if ((e.holds.size === 0 || e.gone) && e.aliveUntil + RETAIN_MS <= now && !e.asking) {
        this.#leases.delete(lease);
        continue;
      }
      if (e.asking || e.gone || e.holds.size === 0) continue; // proof kept, not refreshed
      if (e.aliveUntil === 0 || e.aliveUntil - now < (e.grantedTtl * 1_000) / 2) due.push([lease, e]);
    }
    due.sort((a, b) => a[1].aliveUntil - b[1].aliveUntil);
    for (const [lease, e] of due.slice(0, this.#perSecond)) this.#refresh(lease, e);
  }

  #dropOldest(): void {
    const first = this.#leases.keys().next();
    if (!first.done) this.#leases.delete(first.value);
  }
}
