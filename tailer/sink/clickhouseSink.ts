// The ClickHouse sink: batches rows (bounded by size and time; longer while
// the run catches up, shorter live, where a reader waits on them), inserts
// events, then grants, then quarantine (rowWriter.ts), and calls each batch's
// `onDurable` only after every row of it is in ClickHouse — or, for rows
// ClickHouse rejected, in quarantine. An insert that fails for a retriable
// reason is retried with jittered exponential backoff until it succeeds or
// the sink is aborted; meanwhile `add` blocks, so the watch behind it pauses and memory
// stays bounded. Nothing here advances a checkpoint: that is the caller's,
// after `onDurable`.
import type { AuditStore } from '../../core/clickhouse.js';
import { configDefaults } from '../../core/config.js';
import type { Logger } from '../../core/logger.js';
import { retry } from '../../platform/retry.js';
import { writeRows } from './rowWriter.js';
import { rowCount, type RowBatch } from '../types.js';

export interface SinkOptions {
  /** Rows per insert statement. Default: the config schema's tailer.batchMaxRows. */
  maxRows?: number;
  /** Longest a row waits before its batch is flushed (ms). Default: the config schema's tailer.batchMaxDelayMs. */
  maxDelayMs?: number;
  /**
   * The batches while `catchingUp()` says the run is far behind etcd's head: fewer, longer inserts. The store's
   * CPU goes mostly per insert and per part, not per row (test/bench/storeInsert.bench.ts), and a catch-up has no
   * reader waiting on each row. Default: the config schema's tailer.catchUpBatchMaxRows and catchUpBatchMaxDelayMs;
   * false: the live pace always.
   */
  catchUp?: { maxRows: number; maxDelayMs: number } | false;
  /** true while the run is catching up (the pipeline: more than a window of etcd's history still unread). */
  catchingUp?: () => boolean;
  /** Rows buffered before `add` blocks. Default the larger of 3 × maxRows and 2 × catchUp.maxRows (100 000 rows by default). */
  maxBufferedRows?: number;
  /**
   * The same in bytes of values (characters of the events' value and prev_value and the quarantined values): etcd
   * takes values up to 1.5 MiB, so a row count alone let 60 000 buffered rows hold gigabytes. Defaults 16 MiB per
   * insert and 64 MiB buffered; an entry larger than that is taken alone.
   */
  maxBatchBytes?: number;
  maxBufferedBytes?: number;
  /** First retry delay; doubles up to maxBackoffMs, each with ±50 % jitter. Defaults 100 / 5 000 ms. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Observability hooks. */
  onFlush?: (rows: number, seconds: number) => void;
  onRetry?: (err: Error, attempt: number) => void;
  /** Rows ClickHouse rejected, sent to quarantine instead (rowWriter.ts). */
  onQuarantine?: (rows: number) => void;
  /** Runs on each batch before it is written, and may change its rows (the replay check, replays.ts); retried like an insert. */
  beforeWrite?: (batch: RowBatch) => Promise<unknown>;
  /** The etcd timeline the rows belong to (rowWriter.ts). Default 0. */
  timeline?: number;
  /** The writer's leadership term (rowWriter.ts): its rows never replace a higher term's. */
  term?: bigint;
  /** The tailer's key: grant rows put in quarantine carry its proof (rowWriter.ts). */
  proofSecret?: Buffer;
}

interface Pace {
  maxRows: number;
  maxDelayMs: number;
}

interface Entry {
  batch: RowBatch;
  rows: number;
  bytes: number;
  onDurable: () => void;
}

/** What a batch's values weigh (characters: a bound, not an exact byte count, and cheap on the hot path). */
export function valueBytes(b: RowBatch): number {
  let n = 0;
  for (const e of b.events) n += e.value.length + e.prev_value.length;
  for (const q of b.quarantine) n += q.value.length;
  return n;
}

export class SinkAbortedError extends Error {
  constructor() {
    super('the sink was aborted before the rows were durable');
    this.name = 'SinkAbortedError';
  }
}

export class BatchSink {
  readonly #store: AuditStore;
  readonly #log: Logger;
  readonly #live: Pace;
  readonly #catchUp: Pace | undefined;
  readonly #maxBuffered: number;
  readonly #maxBatchBytes: number;
  readonly #maxBufferedBytes: number;
  #bufferedBytes = 0;
  readonly #opts: SinkOptions;
  readonly #abort = new AbortController();
  #queue: Entry[] = [];
  #bufferedRows = 0;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #spaceWaiters: Array<() => void> = [];
  #failing = false;
  #fatal: Error | undefined;

  constructor(store: AuditStore, log: Logger, options: SinkOptions = {}) {
    this.#store = store;
    this.#log = log;
    this.#opts = options;
    this.#live = { maxRows: options.maxRows ?? configDefaults.tailer.batchMaxRows, maxDelayMs: options.maxDelayMs ?? configDefaults.tailer.batchMaxDelayMs };
    const catchUp =
      options.catchUp === false || !options.catchingUp
        ? undefined
        : (options.catchUp ?? { maxRows: configDefaults.tailer.catchUpBatchMaxRows, maxDelayMs: configDefaults.tailer.catchUpBatchMaxDelayMs });
    // Room for a batch being written and the next filling behind it (live: two more, as before the catch-up pace).
    this.#maxBuffered = options.maxBufferedRows ?? Math.max(this.#live.maxRows * 3, (catchUp?.maxRows ?? 0) * 2);
    // A catch-up batch never larger than the buffer: a full buffer below it would flush only on the timer.
    this.#catchUp = catchUp && { ...catchUp, maxRows: Math.min(catchUp.maxRows, this.#maxBuffered) };
    this.#maxBatchBytes = options.maxBatchBytes ?? 16 * 1024 * 1024;
    this.#maxBufferedBytes = Math.max(options.maxBufferedBytes ?? 64 * 1024 * 1024, this.#maxBatchBytes);
  }

  /** The batches' bounds now: the catch-up's while the run catches up, else the live ones. */
  #pace(): Pace {
    return this.#catchUp && this.#opts.catchingUp?.() ? this.#catchUp : this.#live;
  }

  get bufferedBytes(): number {
    return this.#bufferedBytes;
  }

  get bufferedRows(): number {
    return this.#bufferedRows;
  }

  /** true while inserts are failing and being retried. */
  get failing(): boolean {
    return this.#failing;
  }

  /**
   * Queues rows; resolves true once they are accepted (not durable), blocking
   * while the buffer is full; false when `signal` aborted first (nothing queued).
   */
  async add(batch: RowBatch, onDurable: () => void, signal?: AbortSignal): Promise<boolean> {
    if (this.#fatal) throw this.#fatal;
    // Full by rows, or by bytes once something is queued (one entry larger than the bound still goes, alone).
    const full = (): boolean =>
      (this.#bufferedRows >= this.#maxBuffered || (this.#bufferedBytes >= this.#maxBufferedBytes && this.#queue.length > 0)) &&
      !this.#abort.signal.aborted &&
      !signal?.aborted;
    if (full()) {
      // Listens on `signal` only while waiting, and always stops listening when the wait ends.
      const wakeAll = (): void => {
        for (const w of this.#spaceWaiters.splice(0)) w();
      };
      signal?.addEventListener('abort', wakeAll, { once: true });
      try {
        while (full()) await new Promise<void>((resolve) => this.#spaceWaiters.push(resolve));
      } finally {
        signal?.removeEventListener('abort', wakeAll);
      }
    }
    if (this.#abort.signal.aborted) throw new SinkAbortedError();
    if (signal?.aborted) return false;
    const rows = rowCount(batch);
    const bytes = valueBytes(batch);
    this.#queue.push({ batch, rows, bytes, onDurable });
    this.#bufferedRows += rows;
    this.#bufferedBytes += bytes;
    const pace = this.#pace();
    if (this.#bufferedRows >= pace.maxRows || this.#bufferedBytes >= this.#maxBatchBytes) this.#kick();
    else this.#timer ??= setTimeout(() => this.#kick(), pace.maxDelayMs);
    return true;
  }

  /** Writes everything queued; resolves when it is durable (or rejects when aborted first). */
  async drain(): Promise<void> {
    while (this.#queue.length > 0 || this.#flushing) {
      if (this.#abort.signal.aborted) throw new SinkAbortedError();
      this.#kick();
      await this.#flushing;
    }
    if (this.#fatal) throw this.#fatal;
  }

  /** Stops retrying: queued rows are dropped (their checkpoint never moves past them). */
  abort(): void {
    this.#abort.abort(new SinkAbortedError());
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const w of this.#spaceWaiters.splice(0)) w();
  }

  #kick(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#flushing || this.#queue.length === 0) return;
    this.#flushing = this.#flushLoop().finally(() => {
      this.#flushing = undefined;
      if (this.#queue.length > 0 && !this.#abort.signal.aborted) this.#timer ??= setTimeout(() => this.#kick(), this.#pace().maxDelayMs);
    });
  }

  async #flushLoop(): Promise<void> {
    while (this.#queue.length > 0 && !this.#abort.signal.aborted) {
      // Take whole entries up to maxRows (an entry larger than that goes alone, inserted in chunks).
      // One splice per batch: Array#shift per entry copied the rest of a queue of thousands each time.
      const { maxRows } = this.#pace();
      let n = 0;
      let rows = 0;
      let bytes = 0;
      for (let e = this.#queue[0]; e !== undefined && (n === 0 || (rows + e.rows <= maxRows && bytes + e.bytes <= this.#maxBatchBytes)); e = this.#queue[n]) {
        rows += e.rows;
        bytes += e.bytes;
        n += 1;
      }
      const taken = this.#queue.splice(0, n);
      const started = process.hrtime.bigint();
      try {
        await this.#write(taken, maxRows);
      } catch (err) {
        if (err instanceof SinkAbortedError) return;
        this.#fatal = err as Error;
        throw err;
      }
      this.#bufferedRows -= rows;
      this.#bufferedBytes -= bytes;
      this.#opts.onFlush?.(rows, Number(process.hrtime.bigint() - started) / 1e9);
      for (const e of taken) e.onDurable();
      for (const w of this.#spaceWaiters.splice(0)) w();
      if (this.#bufferedRows < this.#pace().maxRows && this.#bufferedBytes < this.#maxBatchBytes && this.#queue.length > 0) return; // wait for more or the timer
    }
  }

  async #write(entries: readonly Entry[], maxRows: number): Promise<void> {
    const batch: RowBatch = {
      events: entries.flatMap((e) => e.batch.events),
      grants: entries.flatMap((e) => e.batch.grants),
      quarantine: entries.flatMap((e) => e.batch.quarantine),
    };
    const retrying = {
      initialMs: this.#opts.initialBackoffMs ?? 100,
      maxMs: this.#opts.maxBackoffMs ?? 5_000,
      signal: this.#abort.signal,
      onRetry: (err: unknown, attempt: number) => {
        this.#failing = true;
        this.#opts.onRetry?.(err as Error, attempt);
        if (attempt === 1 || attempt % 10 === 0)
          this.#log.error({ err: (err as Error).message, attempt }, 'ClickHouse read before insert failed; retrying (checkpoint unchanged)');
      },
    };
    const before = this.#opts.beforeWrite;
    if (before) await retry(() => before(batch), retrying);
    const { quarantined } = await writeRows(this.#store, batch, {
      maxRows,
      timeline: this.#opts.timeline,
      term: this.#opts.term,
      ...(this.#opts.proofSecret ? { proofSecret: this.#opts.proofSecret } : {}),
      retry: {
        initialMs: this.#opts.initialBackoffMs ?? 100,
        maxMs: this.#opts.maxBackoffMs ?? 5_000,
        signal: this.#abort.signal,
        onRetry: (err, attempt) => {
          this.#failing = true;
          this.#opts.onRetry?.(err as Error, attempt);
          if (attempt === 1 || attempt % 10 === 0)
            this.#log.error({ err: (err as Error).message, attempt }, 'ClickHouse insert failed; retrying (checkpoint unchanged)');
        },
      },
    });
    if (this.#failing) this.#log.warn('ClickHouse insert succeeded again');
    this.#failing = false;
    if (quarantined.length > 0) {
      this.#log.error(
        { rows: quarantined.length, revisions: [...new Set(quarantined.map((q) => q.revision))].slice(0, 10), reason: quarantined[0]?.reason },
        'ClickHouse rejected rows; quarantined them and went on',
      );
      this.#opts.onQuarantine?.(quarantined.length);
    }
  }
}
