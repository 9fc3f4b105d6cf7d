// etcd keys and values are bytes; the record keeps them as text. Decoding
// with Buffer#toString('utf8') turns every invalid byte into U+FFFD, so two
// keys an insider wrote in one txn, differing only in such bytes, became one
// (cluster, revision, key) and one replaced the other; a value's bytes could
// be changed without the record (or a digest over it) telling.
//
// etcdText is reversible instead, and the identity on the text our API
// writes: valid UTF-8 stays as it is, except that U+FFFD is the escape —
// an invalid byte b reads U+FFFD and b's two upper-case hex digits, a literal
// U+FFFD reads U+FFFD "--". Prefixes survive (the watch's /l/ test still
// sees a key), and the result is valid UTF-8 for ClickHouse, JSON and
// Parquet. Hand-written: Node gives validity (isUtf8) but not the positions
// of the invalid bytes, and no library maps them reversibly.
import { isUtf8 } from 'node:buffer';

const ESCAPE = '\uFFFD';
const HEX = '0123456789ABCDEF';

/** Length of the valid UTF-8 sequence at i (Unicode 15, table 3-7), or 0 when the byte there starts none. */
function sequenceAt(b: Uint8Array, i: number): number {
  const c = b[i] as number;
  if (c < 0x80) return 1;
  const cont = (j: number, lo = 0x80, hi = 0xbf): boolean => j < b.length && (b[j] as number) >= lo && (b[j] as number) <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(i + 1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const lo = c === 0xe0 ? 0xa0 : 0x80;
    const hi = c === 0xed ? 0x9f : 0xbf;
    return cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const lo = c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xf4 ? 0x8f : 0xbf;
    return cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

/** An etcd key or value as the record's text (see above). */
export function etcdText(bytes: Uint8Array): string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buf) && !buf.includes('\uFFFD', 0, 'utf8')) return buf.toString('utf8');
  let out = '';
  let run = 0; // start of the current run of valid bytes without U+FFFD
  for (let i = 0; i < buf.length;) {
    const n = sequenceAt(buf, i);
    const isFffd = n === 3 && buf[i] === 0xef && buf[i + 1] === 0xbf && buf[i + 2] === 0xbd;
    if (n > 0 && !isFffd) {
      i += n;
      continue;
    }
    out += buf.toString('utf8', run, i);
    if (isFffd) {
      out += `${ESCAPE}--`;
      i += 3;
    } else {
      const c = buf[i] as number;
      out += `${ESCAPE}${HEX[c >> 4]}${HEX[c & 15]}`;
      i += 1;
    }
    run = i;
  }
  return out + buf.toString('utf8', run);
}

/** The bytes etcdText was given back (tests, and a reader who needs the exact bytes). */
export function etcdBytes(text: string): Buffer {
  const parts: Buffer[] = [];
  let run = 0;
  for (let i = text.indexOf(ESCAPE); i !== -1; i = text.indexOf(ESCAPE, run)) {
    parts.push(Buffer.from(text.slice(run, i), 'utf8'));
    const code = text.slice(i + 1, i + 3);
    if (code === '--') parts.push(Buffer.from(ESCAPE, 'utf8'));
    else if (/^[0-9A-F]{2}$/.test(code)) parts.push(Buffer.from([Number.parseInt(code, 16)]));
    else throw new TypeError(`not an etcdText: U+FFFD followed by ${JSON.stringify(code)} at ${i}`);
    run = i + 3;
  }
  parts.push(Buffer.from(text.slice(run), 'utf8'));
  return Buffer.concat(parts);
}
