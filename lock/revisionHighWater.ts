// The lock API's memory of how far etcd has been, kept outside etcd (one small
// file per cluster and keyspace in the data dir, written atomically: temp file,
// fsync, rename). A restore from a snapshot taken with the same member name,
// peer URL and cluster token keeps the cluster id, so the id check alone
// misses it; then etcd's revisions restart below ones already granted at and
// tokens (epoch × 2^48 + revision) would go backwards. With this mark a write
// that lands at or below a revision already seen proves a rewind, and an
// /sys/epoch below the epoch already seen proves one too. The mark also keeps
// the revision of this process's latest grant (`guard`): every grant txn
// requires the grant guard key's mod revision at or above it, so on a rewound
// etcd the granting txn itself fails and nothing is written.
import { mkdirSync, readFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import path from 'node:path';
import Type from 'typebox';
import { decodeValue } from '../core/keyspace.js';

const MarkSchema = Type.Object({
  v: Type.Literal(1),
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

export class RevisionHighWater {
  readonly #file: string;
  #mark: HighWater;
  #durable: HighWater;
  #writing: Promise<void> | undefined;

  constructor(file: string) {
    this.#file = file;
    this.#mark = RevisionHighWater.#load(file);
    this.#durable = this.mark;
  }

  static #load(file: string): HighWater {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { revision: 0n, epoch: 0, guard: 0n };
      throw err;
    }
    const value = decodeValue(MarkSchema, text);
    // A damaged mark must not silently reopen a rewound cluster: refuse to start.
    if (!value) throw new Error(`${file} is not a revision high-water mark; remove it only after checking the cluster was not restored`);
    return { revision: BigInt(value.revision), epoch: value.epoch, guard: BigInt(value.guard ?? '0') };
  }

  get mark(): HighWater {
    return { ...this.#mark };
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

  /** A new epoch bound by an advance: the mark restarts at the advance's revision (the restored guard key is lower). */
  rebase(revision: bigint, epoch: number): void {
    if (epoch > this.#mark.epoch) this.#mark = { revision, epoch, guard: 0n };
  }

  /** Resolves once the file holds the mark as of this call, or a later one (coalesced: one write in flight). */
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
    mkdirSync(path.dirname(this.#file), { recursive: true });
    const tmp = `${this.#file}.${process.pid}.tmp`;
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(JSON.stringify({ v: 1, revision: mark.revision.toString(), epoch: mark.epoch, guard: mark.guard.toString() }));
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
    this.#durable = mark;
  }
}

/** Ordered by epoch, then revision and guard: a new epoch's revisions may restart lower. */
function before(a: HighWater, b: HighWater): boolean {
  return a.epoch < b.epoch || (a.epoch === b.epoch && (a.revision < b.revision || a.guard < b.guard));
}
