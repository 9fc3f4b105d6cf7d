// Where an export's bytes go, in order: a local file or an object being
// uploaded in parts (exporters/storage/multipartUpload.ts). The writer (Parquet
// stitcher, CSV chunks) neither knows nor cares which.
import type { FileHandle } from 'node:fs/promises';

export interface ByteSink {
  /** Resolves when the sink has taken the bytes (it may still be sending them); the caller may reuse nothing it passed. */
  write(buf: Buffer): Promise<void>;
}

/** Appends to an open file, looping over short writes. */
export function fileSink(fh: FileHandle): ByteSink {
  return {
    async write(buf: Buffer): Promise<void> {
      let done = 0;
      while (done < buf.length) {
        const { bytesWritten } = await fh.write(buf, done, buf.length - done);
        done += bytesWritten;
      }
    },
  };
}
