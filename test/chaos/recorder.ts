// The independent recorder: its own etcd watch from revision 1 over /l/, /q/
// and /sys/ with previous values, appended to a JSONL file. It shares nothing
// with lockaudit's tailer on purpose (no import from tailer/ or core/): its
// own etcd3 client, its own reconnect loop, its own prefixes. When a member
// dies the watch is rebuilt from the recorder's own last revision; when the
// cluster is restored from a snapshot (head below what it has seen, or the
// chaos run announcing it) it writes a `restore` line and follows the
// restored cluster's revisions, so the file is the real-time order of every
// committed change across eras.
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Etcd3, type IEvent, type IWatchResponse, type Watcher } from 'etcd3';
import { readJsonLines } from './jsonLines.js';

const PREFIXES = ['/l/', '/q/', '/sys/'];
/** The longest one etcd call of the recorder may take before it reconnects. */
const CALL_DEADLINE_MS = 10_000;

/** `p`, or a rejection once `ms` passed. */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** One committed change, as etcd reported it. Revisions are decimal strings (they can pass 2^53 after a bumped restore). */
export interface RecordedChange {
  kind: 'change';
  /** Position in the file: the real-time order across restores. */
  seq: number;
  /** Which era (0 at the start, +1 per restore) the change belongs to. */
  era: number;
  revision: string;
  key: string;
  type: 'put' | 'delete';
  value: string;
  prevValue: string | null;
  lease: string;
  createRevision: string;
  version: string;
  at: number;
}

export interface RecordedRestore {
  kind: 'restore';
  seq: number;
  era: number;
  /** The last revision the recorder had seen before the restore. */
  lastRevision: string;
  /** The restored cluster's head: watching resumes above it. */
  restoredHead: string;
  at: number;
}

/**
 * A revision whose only changes lie outside the lock keyspace (under `/`, not
 * `/l/`, `/q/` or `/sys/`): written so that every revision of every era is
 * accounted for in the file — the checker's proof that the recording has no
 * hole (a stalled or skipping recorder makes the run invalid, not clean).
 */
export interface RecordedOther {
  kind: 'other';
  seq: number;
  era: number;
  revision: string;
}

export type RecorderLine = RecordedChange | RecordedRestore | RecordedOther;

export class Recorder {
  #endpoints: string[];
  #file: string;
  #next = 1n;
  #seq = 0;
  #era = 0;
  #stopped = false;
  #loop: Promise<void> | undefined;
  #client: Etcd3 | undefined;
  #wake: (() => void) | undefined;
  #announcedRestore: bigint | undefined;
  reconnects = 0;

  constructor(endpoints: string[], file: string) {
    this.#endpoints = endpoints;
    this.#file = file;
  }

  /** The era (0, then +1 per restore) the recorder is in now. */
  get era(): number {
    return this.#era;
  }

  /** The highest revision the file holds every change up to. */
  get lastRevision(): bigint {
    return this.#next - 1n;
  }

  start(): void {
    this.#loop = this.#run();
  }

  /** The chaos run restores a snapshot whose head will be `head`: resume above it. */
  expectRestore(head: bigint): void {
    this.#announcedRestore = head;
    this.#wake?.();
  }

  /** Waits until the file holds every change up to `revision`. */
  async waitFor(revision: bigint, timeoutMs = 60_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.lastRevision < revision) {
      if (Date.now() > deadline) return false;
      await sleep(100);
    }
    return true;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    // Bounded: a loop stuck in a call gives up at its deadline; closing its client ends it sooner.
    this.#client?.close();
    await within(this.#loop ?? Promise.resolve(), 2 * CALL_DEADLINE_MS).catch(() => undefined);
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      // One revision can carry tens of thousands of events (a marker lease expiring at full throughput deleted
      // 29 635 markers at once, ~10 MB): grpc-js refuses messages above 4 MiB by default, and the recorder stalled.
      const client = new Etcd3({ hosts: this.#endpoints, dialTimeout: 2_000, grpcOptions: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 } });
      this.#client = client;
      let watcher: Watcher | undefined;
      try {
        // Every call under a deadline: a call to a member killed or stopped mid-call can wait forever, and the
        // recorder then neither followed etcd nor stopped (a fresh clone's short run hung 300 s after a bumped restore).
        const head = BigInt((await within(client.get('/sys/').exec(), CALL_DEADLINE_MS)).header.revision);
        if (this.#announcedRestore !== undefined && head >= this.#announcedRestore) {
          this.#restored(this.#announcedRestore);
          this.#announcedRestore = undefined;
        } else if (this.#announcedRestore === undefined && head < this.lastRevision) {
          this.#restored(head); // a restore nobody announced: the head went backwards
        }
        watcher = await within(client.watch().prefix('/').startRevision(String(this.#next)).withPreviousKV().create(), CALL_DEADLINE_MS);
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          watcher?.on('data', (res: IWatchResponse) => this.#onData(res));
          // Any interruption: drop this client and rebuild from our own last revision.
          watcher?.on('disconnected', () => resolve());
          watcher?.on('error', () => resolve());
          watcher?.on('end', () => resolve());
        });
      } catch {
        // A member down, no quorum, a restore under way: try again shortly.
      } finally {
        this.#wake = undefined;
        await watcher?.cancel().catch(() => {});
        client.close();
      }
      if (!this.#stopped) {
        this.reconnects++;
        await sleep(300);
      }
    }
  }

  #restored(head: bigint): void {
    const line: RecordedRestore = {
      kind: 'restore',
      seq: this.#seq++,
      era: this.#era + 1,
      lastRevision: String(this.lastRevision),
      restoredHead: String(head),
      at: Date.now(),
    };
    this.#era++;
    appendFileSync(this.#file, `${JSON.stringify(line)}\n`);
    this.#next = head + 1n;
  }

  #onData(res: IWatchResponse): void {
    if (this.#announcedRestore !== undefined) return; // old era's tail after the snapshot was taken: the reconnect decides
    const lines: string[] = [];
    let top = this.#next - 1n;
    const others = new Set<bigint>();
    const inPrefixes = new Set<bigint>();
    for (const event of res.events as IEvent[]) {
      const key = event.kv.key.toString('utf8');
      const revision = BigInt(event.kv.mod_revision);
      if (revision < this.#next) continue; // a replay after reconnecting
      if (revision > top) top = revision;
      if (!PREFIXES.some((p) => key.startsWith(p))) {
        others.add(revision);
        continue;
      }
      inPrefixes.add(revision);
      const change: RecordedChange = {
        kind: 'change',
        seq: this.#seq++,
        era: this.#era,
        revision: String(revision),
        key,
        type: event.type === 'Delete' ? 'delete' : 'put',
        value: event.type === 'Delete' ? '' : event.kv.value.toString('utf8'),
        prevValue: event.prev_kv ? event.prev_kv.value.toString('utf8') : null,
        lease: event.type === 'Delete' ? (event.prev_kv?.lease ?? '0') : event.kv.lease,
        createRevision: event.type === 'Delete' ? (event.prev_kv?.create_revision ?? '0') : event.kv.create_revision,
        version: event.kv.version,
        at: Date.now(),
      };
      lines.push(JSON.stringify(change));
    }
    // A progress notification (no events) says everything up to its revision was sent.
    if (res.events.length === 0 && !res.created) {
      const progress = BigInt(res.header.revision);
      if (progress > top) top = progress;
    }
    for (const revision of others) {
      if (!inPrefixes.has(revision))
        lines.push(JSON.stringify({ kind: 'other', seq: this.#seq++, era: this.#era, revision: String(revision) } satisfies RecordedOther));
    }
    if (lines.length > 0) appendFileSync(this.#file, `${lines.join('\n')}\n`);
    // Whole revisions only: etcd never splits one revision across responses unless fragmenting, which we do not ask for.
    this.#next = top + 1n;
  }
}

export function readRecording(file: string): RecorderLine[] {
  return readJsonLines<RecorderLine>(file);
}
