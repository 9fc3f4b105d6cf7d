// One watch over the lock keyspace for one revision window [start, end):
// yields whole revisions in order, progress notifications, and the end of the
// window. The position is ours, not etcd3's: its Watcher resumes after a
// disconnect from the response header's revision, which during catch-up is
// the *current* revision and would skip history. So on a disconnect we drop
// that watcher and open a new one from the next revision we still need
// (after a short delay that grows, up to ~2 s, while etcd stays away).
// Backpressure: when more than `highWaterEvents` events, or `highWaterBytes`
// of keys and values, wait for the consumer the watch is cancelled (paused)
// and reopened from the same position once the consumer is below both low
// waters: memory stays bounded however slow the sink is and however large
// the values (etcd takes values up to 1.5 MiB: 20 000 events of them are 30 GB).
import type { Etcd3, IKeyValue, IWatchResponse, Watcher } from 'etcd3';
import type { Logger } from '../../core/logger.js';
import { Backoff } from '../../platform/retry.js';
import { isCaptured } from '../decode/decoder.js';
import type { Change, KvSnapshot, RevisionChanges } from '../types.js';
import { PREFIX, prefixEnd } from '../../core/keyspace.js';
import { etcdText } from '../../core/etcdText.js';

// One range covers /l/, /q/ and /sys/ (from the first prefix to the end of the last);
// keys in between that are not under them are filtered out here.
export const WATCH_RANGE = { start: PREFIX.hold, end: prefixEnd(PREFIX.sys) } as const;

export type WatchItem =
  /** `readAt`: when the response that delivered the revision was read (ms, this process's clock): after its commit. */
  { kind: 'revision'; changes: RevisionChanges; readAt: number } | { kind: 'progress'; revision: bigint } | { kind: 'end' };

export interface WatchWindowOptions {
  start: bigint;
  /** Exclusive; undefined: watch live, forever. */
  end?: bigint;
  highWaterEvents?: number;
  lowWaterEvents?: number;
  /** Bytes of keys and values (previous ones included) waiting for the consumer at which the watch pauses. Default 32 MiB. */
  highWaterBytes?: number;
  /** Resumes once at most this many bytes wait (and at most lowWaterEvents events). Default a quarter of highWaterBytes. */
  lowWaterBytes?: number;
  /** Each response's header revision: the cluster's head. */
  onHead?: (revision: bigint) => void;
  /**
   * Awaited before the watch reopens after a disconnect: every reconnect goes
   * through the start decision (startDecision.ts), since a restored etcd whose
   * head passed our position would otherwise deliver its own writes as if they
   * followed ours. false: stay closed (the run is ending); a rejection (etcd
   * still away): ask again after the next backoff delay.
   */
  beforeReopen?: () => Promise<boolean>;
  log: Logger;
}

export class WatchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WatchError';
  }
}

function kvOf(kv: IKeyValue): KvSnapshot {
  return {
    key: etcdText(kv.key),
    value: kv.value ? etcdText(kv.value) : '',
    createRevision: String(kv.create_revision ?? '0'),
    modRevision: String(kv.mod_revision ?? '0'),
    version: String(kv.version ?? '0'),
    lease: String(kv.lease ?? '0'),
  };
}

export class WatchWindow {
  readonly #client: Etcd3;
  readonly #opts: WatchWindowOptions;
  readonly #high: number;
  readonly #low: number;
  readonly #highBytes: number;
  readonly #lowBytes: number;
  #position: bigint;
  // A FIFO read from #head: Array#shift on a queue of thousands of revisions copies the rest each time
  // (it was 6 % of the tailer's main thread at one window in a catch-up profile).
  #queue: Array<{ item: WatchItem; events: number; bytes: number } | undefined> = [];
  #head = 0;
  #queuedEvents = 0;
  #queuedBytes = 0;
  #maxQueuedBytes = 0;
  /** A revision still arriving in fragments (etcd splits a response over its request size, even inside a revision). */
  #pending: { changes: RevisionChanges; count: number; bytes: number } | undefined;
  #watcher: Watcher | undefined;
  #generation = 0;
  #paused = false;
  #finished = false;
  #error: Error | undefined;
  #wake: (() => void) | undefined;
  #reopenTimer: NodeJS.Timeout | undefined;
  // Disconnects in a row, since the last watch etcd accepted: the reopen delay grows (jittered, at most ~2 s) while etcd stays away.
  readonly #reopen = new Backoff({ initialMs: 200, maxMs: 2_000, jitter: 0.25 });

  constructor(client: Etcd3, options: WatchWindowOptions) {
    this.#client = client;
    this.#opts = options;
    this.#position = options.start;
    this.#high = options.highWaterEvents ?? 20_000;
    this.#low = options.lowWaterEvents ?? Math.floor(this.#high / 4);
    this.#highBytes = options.highWaterBytes ?? 32 * 1024 * 1024;
    this.#lowBytes = options.lowWaterBytes ?? Math.floor(this.#highBytes / 4);
  }

  /** The most bytes of keys and values that ever waited for the consumer at once (a bound's test and the soak read it). */
  get maxQueuedBytes(): number {
    return this.#maxQueuedBytes;
  }

  /** The next revision this window still needs. */
  get position(): bigint {
    return this.#position;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Yields items in revision order until the window ends, the signal aborts, or the watch fails (throws WatchError). */
  async *items(signal: AbortSignal): AsyncGenerator<WatchItem> {
    const onAbort = (): void => this.#notify();
    signal.addEventListener('abort', onAbort, { once: true });
    this.#open();
    try {
      for (;;) {
        if (signal.aborted) return;
        const next = this.#dequeue();
        if (next) {
          this.#queuedEvents -= next.events;
          this.#queuedBytes -= next.bytes;
          if (this.#paused && this.#queuedEvents <= this.#low && this.#queuedBytes <= this.#lowBytes && !this.#finished) {
            this.#paused = false;
            this.#open();
          }
          yield next.item;
          if (next.item.kind === 'end') return;
          continue;
        }
        if (this.#error) throw this.#error;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#stop();
    }
  }

  #notify(): void {
    this.#wake?.();
  }

  #open(): void {
    if (this.#finished) return;
    const generation = ++this.#generation;
    const builder = this.#client.watch().inRange(WATCH_RANGE).startRevision(this.#position.toString()).withPreviousKV();
    // Fragments (WatchCreateRequest.fragment, which etcd3's builder has no method for): without them etcd sends up
    // to 1 000 revisions in one response whatever their size — 24 values of 1 MiB arrived as one 24 MiB message, so
    // no bound here could hold. With them each response stays under etcd's request limit (1.5 MiB by default).
    (builder as unknown as { request: { fragment?: boolean } }).request.fragment = true;
    const watcher = builder.watcher();
    this.#watcher = watcher;
    watcher.on('connected', (res: IWatchResponse) => {
      if (generation !== this.#generation) return;
      if (this.#reopen.attempts > 0) this.#opts.log.info({ position: this.#position.toString(), attempts: this.#reopen.attempts }, 'watch reopened');
      this.#reopen.reset();
      this.#opts.onHead?.(BigInt(res.header.revision));
    });
    watcher.on('data', (res: IWatchResponse) => {
      if (generation === this.#generation) this.#onResponse(res);
    });
    watcher.on('disconnected', (err?: Error) => {
      if (generation !== this.#generation) return;
      // While etcd is down every reopen fails at once: back off and log the first and every 20th.
      const delay = this.#reopen.next();
      const attempts = this.#reopen.attempts;
      if (attempts === 1 || attempts % 20 === 0) {
        this.#opts.log.warn({ position: this.#position.toString(), attempts, err: err?.message }, 'watch disconnected; reopening from our own position');
      }
      this.#drop();
      this.#reopenTimer = setTimeout(() => {
        this.#reopenTimer = undefined;
        void this.#reopenChecked();
      }, delay);
    });
    watcher.on('error', (err: Error) => {
      if (generation !== this.#generation) return;
      // A watch from a compacted revision ends here ("Watcher canceled"): the caller checks compaction.
      this.#error = new WatchError(`watch from revision ${this.#position} failed: ${err.message}`, { cause: err });
      this.#drop();
      this.#notify();
    });
  }

  /** Reopens after a disconnect once `beforeReopen` allows it (no watcher is open meanwhile, so nothing is delivered). */
  async #reopenChecked(): Promise<void> {
    const check = this.#opts.beforeReopen;
    if (check) {
      let ok: boolean;
      try {
        ok = await check();
      } catch {
        if (this.#finished) return;
        this.#reopenTimer = setTimeout(() => {
          this.#reopenTimer = undefined;
          void this.#reopenChecked();
        }, this.#reopen.next());
        return;
      }
      if (!ok || this.#finished) return;
    }
    if (!this.#paused) this.#open();
  }

  /** Forgets the current watcher: anything it still delivers is ignored. */
  #drop(): void {
    this.#generation += 1;
    this.#pending = undefined; // the next watch opens at #position, the pending revision: it comes again whole
    const w = this.#watcher;
    this.#watcher = undefined;
    if (w) void w.cancel().catch(() => undefined);
  }

  #stop(): void {
    this.#finished = true;
    if (this.#reopenTimer) clearTimeout(this.#reopenTimer);
    this.#drop();
  }

  #dequeue(): { item: WatchItem; events: number; bytes: number } | undefined {
    const next = this.#queue[this.#head];
    if (!next) return undefined;
    this.#queue[this.#head] = undefined;
    this.#head += 1;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head >= 1_024 && this.#head * 2 >= this.#queue.length) {
      this.#queue.splice(0, this.#head); // drop the consumed front now and then: amortised O(1)
      this.#head = 0;
    }
    return next;
  }

  #push(item: WatchItem, events: number, bytes = 0): void {
    this.#queue.push({ item, events, bytes });
    this.#queuedEvents += events;
    this.#queuedBytes += bytes;
    if (this.#queuedBytes > this.#maxQueuedBytes) this.#maxQueuedBytes = this.#queuedBytes;
  }

  #onResponse(res: IWatchResponse): void {
    const readAt = Date.now();
    const head = BigInt(res.header.revision);
    this.#opts.onHead?.(head);
    const end = this.#opts.end;
    if (res.events.length === 0) {
      if (this.#pending) return; // not between fragments: the pending revision is not delivered yet
      // A progress notification: every change up to `head` was delivered (etcd sends them to synced watchers only).
      if (end !== undefined && head >= end - 1n) this.#finish();
      else if (head >= this.#position) {
        this.#position = head + 1n;
        this.#push({ kind: 'progress', revision: head }, 0);
      }
      this.#notify();
      return;
    }
    let current: RevisionChanges | undefined = this.#pending?.changes;
    let count = this.#pending?.count ?? 0;
    let bytes = this.#pending?.bytes ?? 0;
    this.#pending = undefined;
    for (const ev of res.events) {
      const revision = BigInt(ev.kv.mod_revision);
      if (end !== undefined && revision >= end) {
        if (current) this.#push({ kind: 'revision', changes: current, readAt }, count, bytes);
        current = undefined;
        this.#finish();
        this.#notify();
        return;
      }
      if (revision < this.#position) continue; // already delivered before a reopen
      if (current && current.revision !== revision) {
        this.#push({ kind: 'revision', changes: current, readAt }, count, bytes);
        this.#position = current.revision + 1n;
        current = undefined;
        count = 0;
        bytes = 0;
      }
      const key = etcdText(ev.kv.key);
      if (!isCaptured(key)) continue;
      current ??= { revision, changes: [] };
      const change: Change = { type: ev.type === 'Delete' ? 'delete' : 'put', kv: kvOf(ev.kv) };
      if (ev.prev_kv) change.prev = kvOf(ev.prev_kv);
      current.changes.push(change);
      count += 1;
      bytes += ev.kv.key.length + (ev.kv.value?.length ?? 0) + (ev.prev_kv ? ev.prev_kv.key.length + (ev.prev_kv.value?.length ?? 0) : 0);
    }
    const last = BigInt((res.events.at(-1) as { kv: IKeyValue }).kv.mod_revision);
    // A fragment other than the last: revisions below `last` are whole, `last` may go on in the next response.
    const more = res.fragment === true;
    if (more && current && current.revision === last) this.#pending = { changes: current, count, bytes };
    else if (current) this.#push({ kind: 'revision', changes: current, readAt }, count, bytes);
    const next = more ? last : last + 1n;
    if (next > this.#position) this.#position = next;
    // A revision still pending when the watch pauses is dropped with it and read again whole (the position stays on it).
    if ((this.#queuedEvents >= this.#high || this.#queuedBytes >= this.#highBytes) && !this.#paused) {
      this.#paused = true; // cancel now, reopen from #position when the consumer caught up
      this.#drop();
    }
    this.#notify();
  }

  #finish(): void {
    if (this.#finished) return;
    this.#push({ kind: 'end' }, 0);
    this.#stop();
  }
}
