// The lock API's memory of how far etcd has been, kept outside etcd (one small
// file per cluster and keyspace in the data dir). A restore from a snapshot
// taken with the same member name, peer URL and cluster token keeps the
// cluster id, so the id check alone
// misses it; then etcd's revisions restart below ones already granted at and
// tokens (epoch × 2^48 + revision) would go backwards. With this mark a write
// that lands at or below a revision already seen proves a rewind, and an
// /sys/epoch below the epoch already seen proves one too. The mark also keeps
// the revision of this process's latest grant (`guard`): every grant txn
// requires the grant guard key's mod revision at or above it, so on a rewound
// etcd the granting txn itself fails and nothing is written.
//
// Every grant waits for its mark to be durable, so a write must cost one
// synchronous-data write, not a temp file, two fsyncs and a rename (nor a
// chain of open/write/sync/close hops through libuv's pool, each waiting for
// a busy event loop): the file is two fixed 512-byte slots written in place
// in turn through one O_DSYNC descriptor, each a checksummed mark. A write
// torn by a crash damages only the slot being written, whose mark no token had
// left with yet; the other slot still holds the previous durable mark, and a
// load takes the highest valid one. The file is made (or converted from the
// one-JSON-document format of earlier versions) atomically, by rename.
import { createHash } from 'node:crypto';
import { close as closeFd, constants, mkdirSync, open as openFd, readFileSync, write as writeFd } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { promisify } from 'node:util';
import path from 'node:path';
import Type from 'typebox';
import { decodeValue } from '../core/keyspace.js';

const MarkSchema = Type.Object({
  /** 1: the whole file (earlier versions); 2: one slot. */
  v: Type.Union([Type.Literal(1), Type.Literal(2)]),
  /** Highest etcd revision any response ever reported (decimal string). */
  revision: Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' }),
  /** The /sys/epoch epoch that revision belongs to. */
  epoch: Type.Integer({ minimum: 0 }),
  /** The revision of this process's latest grant in that epoch (the grant guard's floor); absent in older files. */
  guard: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' })),
});

export interface HighWater {
  revision: bigint;
  epoch: number;
  /** The revision of the latest grant this process made in `epoch`: every grant txn requires the guard key at or above it. */
  guard: bigint;
}

/** <dataDir>/lock/<cluster>[~<root>].highwater.json: the root keeps test keyspaces apart. */
export function highWaterPath(dataDir: string, cluster: string, root: string): string {
  const suffix = root ? `~${encodeURIComponent(root)}` : '';
  return path.join(dataDir, 'lock', `${cluster}${suffix}.highwater.json`);
}

/** Bytes per slot: one disk sector, so a slot write is not split across sectors. */
export const SLOT_BYTES = 512;
const SLOTS = 2;

function checksum(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** One slot: `<mark JSON>\n<checksum>\n`, zero-padded to SLOT_BYTES. */
export function encodeSlot(mark: HighWater): Buffer {
  const json = JSON.stringify({ v: 2, revision: mark.revision.toString(), epoch: mark.epoch, guard: mark.guard.toString() });
  const slot = Buffer.alloc(SLOT_BYTES);
  slot.write(`${json}\n${checksum(json)}\n`, 'utf8');
  return slot;
}

function decodeSlot(slot: Buffer): HighWater | undefined {
  const text = slot.toString('utf8').replace(/\0+$/, '');
  const match = /^([^\n]+)\n([0-9a-f]{16})\n$/.exec(text);
  if (!match || checksum(match[1] as string) !== match[2]) return undefined;
  const value = decodeValue(MarkSchema, match[1] as string);
  return value ? { revision: BigInt(value.revision), epoch: value.epoch, guard: BigInt(value.guard ?? '0') } : undefined;
}

export interface MarkFile {
  mark: HighWater;
  /** The slot holding `mark`, which the next in-place write must not touch; undefined: not the slotted format. */
  slot: number | undefined;
}

/** The mark a file holds: the highest valid slot, or the one-document format of earlier versions; undefined when damaged. */
export function decodeMarkFile(bytes: Buffer): MarkFile | undefined {
  if (bytes.length === SLOT_BYTES * SLOTS) {
    let best: MarkFile | undefined;
    for (let i = 0; i < SLOTS; i++) {
      const mark = decodeSlot(bytes.subarray(i * SLOT_BYTES, (i + 1) * SLOT_BYTES));
      if (mark && (!best || before(best.mark, mark))) best = { mark, slot: i };
    }
    return best;
  }
  const value = decodeValue(MarkSchema, bytes.toString('utf8'));
  return value ? { mark: { revision: BigInt(value.revision), epoch: value.epoch, guard: BigInt(value.guard ?? '0') }, slot: undefined } : undefined;
}

export interface RevisionHighWaterOptions {
  /** Awaited before each write reaches the file, with the mark it carries (tests slow the disk with it); default none. */
  beforeWrite?: (mark: HighWater) => Promise<void>;
}

const openAsync = promisify(openFd);
const writeAsync = promisify(writeFd);
const closeAsync = promisify(closeFd);

export class RevisionHighWater {
  readonly #file: string;
  #mark: HighWater;
  #durable: HighWater;
  #writing: Promise<void> | undefined;
  /** The file is in the slotted format (else the first write makes it so, by rename). */
  #slotted: boolean;
  /** The slot the next in-place write goes to: never the one holding the latest durable mark. */
  #nextSlot = 0;
  /** O_RDWR | O_DSYNC, opened on the first in-place write and kept until close(). */
  #fd: number | undefined;
  #closed = false;
  readonly #beforeWrite: RevisionHighWaterOptions['beforeWrite'];
  /** Writes made (each one synchronous-data write): grants ÷ writes is how many grants share one. */
  #writes = 0;

  constructor(file: string, options: RevisionHighWaterOptions = {}) {
    this.#file = file;
    this.#beforeWrite = options.beforeWrite;
    const loaded = RevisionHighWater.#load(file);
    this.#mark = loaded.mark;
    this.#slotted = loaded.slot !== undefined;
    this.#nextSlot = ((loaded.slot ?? 0) + 1) % SLOTS;
    this.#durable = this.mark;
  }

  static #load(file: string): MarkFile {
    let bytes: Buffer;
    try {
      bytes = readFileSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { mark: { revision: 0n, epoch: 0, guard: 0n }, slot: undefined };
      throw err;
    }
    const loaded = decodeMarkFile(bytes);
    // A damaged mark must not silently reopen a rewound cluster: refuse to start.
    if (!loaded) throw new Error(`${file} is not a revision high-water mark; remove it only after checking the cluster was not restored`);
    return loaded;
  }

  get mark(): HighWater {
    return { ...this.#mark };
  }

  /** Writes made since this instance was created. */
  get writes(): number {
    return this.#writes;
  }

  /** Raises the mark in memory (every response header); never lowers it. */
  see(revision: bigint, epoch: number): void {
    if (epoch > this.#mark.epoch) this.#mark = { revision, epoch, guard: 0n };
    else if (epoch === this.#mark.epoch && revision > this.#mark.revision) this.#mark = { ...this.#mark, revision };
  }

  /** A grant committed at `revision` in the mark's epoch: later grant txns require the guard key at or above it. */
  granted(revision: bigint): void {
    if (revision > this.#mark.guard) this.#mark = { ...this.#mark, guard: revision, revision: revision > this.#mark.revision ? revision : this.#mark.revision };
  }

  /**
   * A grant some process made at `revision` in `epoch` (the shared high-water: what the audit store captured):
   * the mark and the guard rise to it, or to its epoch when that is later. Never lowers anything.
   */
  raise(revision: bigint, epoch: number): void {
    const m = this.#mark;
    if (epoch > m.epoch) this.#mark = { revision, epoch, guard: revision };
    else if (epoch === m.epoch && (revision > m.guard || revision > m.revision)) {
      this.#mark = { epoch, revision: revision > m.revision ? revision : m.revision, guard: revision > m.guard ? revision : m.guard };
    }
  }

  /** A new epoch bound by an advance: the mark restarts at the advance's revision (the restored guard key is lower). */
  rebase(revision: bigint, epoch: number): void {
    if (epoch > this.#mark.epoch) this.#mark = { revision, epoch, guard: 0n };
  }

  /**
   * Resolves once the file holds the mark as of this call, or a later one. Group commit: one write in
   * flight at a time; callers arriving while it runs wait for it, and then for one next write that
   * carries the mark as it is when that write starts — so concurrent grants share one synchronous write,
   * and none resolves before a durable mark covers its own revision.
   */
  async persist(): Promise<void> {
    const target = this.mark;
    while (before(this.#durable, target)) {
      if (!this.#writing) {
        const snapshot = this.mark;
        this.#writing = this.#write(snapshot).finally(() => {
          this.#writing = undefined;
        });
      }
      await this.#writing;
    }
  }

  async #write(mark: HighWater): Promise<void> {
    if (this.#closed) throw new Error(`${this.#file}: the high-water mark is closed`);
    await this.#beforeWrite?.(mark);
    this.#writes++;
    if (!this.#slotted) await this.#create(mark);
    else await this.#writeSlot(mark);
    this.#durable = mark;
  }

  /**
   * In place: one slot, one write on the O_DSYNC descriptor, which returns once the data is on disk
   * (the file's size never changes, so its metadata need not be flushed).
   */
  async #writeSlot(mark: HighWater): Promise<void> {
    const slot = this.#nextSlot;
    this.#fd ??= await openAsync(this.#file, constants.O_RDWR | constants.O_DSYNC);
    const bytes = encodeSlot(mark);
    const { bytesWritten } = await writeAsync(this.#fd, bytes, 0, SLOT_BYTES, slot * SLOT_BYTES);
    if (bytesWritten !== SLOT_BYTES) throw new Error(`${this.#file}: short write of the high-water mark (${bytesWritten} of ${SLOT_BYTES} bytes)`);
    this.#nextSlot = (slot + 1) % SLOTS;
  }

  /** A new slotted file (both slots this mark), atomically: temp file, fsync, rename, fsync of the directory. */
  async #create(mark: HighWater): Promise<void> {
    // Another instance on this file may have made it meanwhile: then write in place, keeping its inode.
    const now = RevisionHighWater.#load(this.#file);
    if (now.slot !== undefined) {
      this.#slotted = true;
      this.#nextSlot = (now.slot + 1) % SLOTS;
      return this.#writeSlot(before(now.mark, mark) ? mark : now.mark);
    }
    mkdirSync(path.dirname(this.#file), { recursive: true });
    const tmp = `${this.#file}.${process.pid}.tmp`;
    const fh = await open(tmp, 'w');
    try {
      const slot = encodeSlot(mark);
      await fh.writeFile(Buffer.concat([slot, slot]));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, this.#file);
    const dir = await open(path.dirname(this.#file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    this.#slotted = true;
    this.#nextSlot = 0;
  }

  /** Waits for a write in flight, then closes the descriptor; later persists throw. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#writing?.catch(() => undefined);
    const fd = this.#fd;
    this.#fd = undefined;
    if (fd !== undefined) await closeAsync(fd);
  }
}

/** Ordered by epoch, then revision and guard: a new epoch's revisions may restart lower. */
function before(a: HighWater, b: HighWater): boolean {
  return a.epoch < b.epoch || (a.epoch === b.epoch && (a.revision < b.revision || a.guard < b.guard));
}
