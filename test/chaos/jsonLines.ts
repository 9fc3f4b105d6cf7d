// A JSON-lines file read a chunk at a time: a 30-minute run at the realistic load writes recordings and store
// dumps larger than one JavaScript string can hold (readFileSync(…, 'utf8') → "Invalid string length").
import { closeSync, openSync, readSync } from 'node:fs';

export function readJsonLines<T>(file: string): T[] {
  const out: T[] = [];
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(16 * 1024 * 1024);
    let rest = '';
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      // A chunk may end inside a multi-byte character: decode only up to its last newline, keep the bytes after.
      const cut = buf.lastIndexOf(10, n - 1);
      if (cut < 0) {
        rest += buf.toString('utf8', 0, n);
        continue;
      }
      const lines = (rest + buf.toString('utf8', 0, cut)).split('\n');
      rest = buf.toString('utf8', cut + 1, n);
      for (const line of lines) if (line) out.push(JSON.parse(line) as T);
    }
    if (rest) out.push(JSON.parse(rest) as T);
  } finally {
    closeSync(fd);
  }
  return out;
}
