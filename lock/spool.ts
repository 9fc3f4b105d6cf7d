// The fail-open spool writer: one JSON line per unprotected grant, appended
// and fsync'd before the grant is answered, so a crash loses nothing that
// was granted. Appends are serialized; a torn last line left by a crash is
// closed off with a newline before the next record (readers skip it).
import { mkdirSync } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { SpoolRecord } from '../core/spool.js';

export class SpoolWriter {
  readonly file: string;
  #fd: Promise<FileHandle> | undefined;
  #tail: Promise<void> = Promise.resolve();

  constructor(file: string) {
    this.file = file;
  }

  async #open(): Promise<FileHandle> {
    mkdirSync(path.dirname(this.file), { recursive: true });
    const fd = await open(this.file, 'a+');
    const size = (await stat(this.file)).size;
    if (size > 0) {
      const last = Buffer.alloc(1);
      await fd.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) await fd.write('\n');
    }
    // The directory entry must be durable too, or a crash can lose a new file.
    const dir = await open(path.dirname(this.file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    return fd;
  }

  /** Resolves once the record is on disk (written and fsync'd). */
  append(record: SpoolRecord): Promise<void> {
    const line = `${JSON.stringify(record)}\n`;
    const run = this.#tail.then(async () => {
      this.#fd ??= this.#open();
      let fd: FileHandle;
      try {
        fd = await this.#fd;
      } catch (err) {
        this.#fd = undefined;
        throw err;
      }
      await fd.write(line);
      await fd.sync();
    });
    // The chain continues after a failure; the failing append still rejects.
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.#tail;
    const fd = this.#fd;
    this.#fd = undefined;
    if (fd) await (await fd).close().catch(() => undefined);
  }
}
