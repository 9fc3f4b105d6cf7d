// What the store keeps of an etcd value (docs/operations.md, "What the store keeps of a value"): etcd takes values up to 1.5 MiB, and a value written
// around the lock API can be that large; the audit store keeps the first VALUE_KEPT_BYTES of it, with its size
// and sha256, so one insider's writes cannot make every page, digest window and buffer that carries values
// grow with them. A value the lock API writes is far below the bound: its rows keep it whole.
import { createHash } from 'node:crypto';

/** Bytes of a value kept in the store; a larger one keeps this prefix (cut at a UTF-8 character boundary). */
export const VALUE_KEPT_BYTES = 64 * 1024;

/** A value as the store keeps it: `sha256` is '' when `value` is the whole value, else the whole value's (hex). */
export interface KeptValue {
  value: string;
  /** The whole value's size in bytes (UTF-8). */
  bytes: number;
  sha256: string;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** `text` bounded to `limit` bytes: whole when it fits, else its longest prefix of whole characters, its size and its sha256. */
export function keptValue(text: string, limit = VALUE_KEPT_BYTES): KeptValue {
  // A string of n UTF-16 units takes at most 3n bytes: most values are decided without encoding them.
  if (text.length * 3 <= limit) return { value: text, bytes: Buffer.byteLength(text, 'utf8'), sha256: '' };
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return { value: text, bytes: bytes.length, sha256: '' };
  let end = limit;
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end -= 1; // not inside a character
  return { value: bytes.subarray(0, end).toString('utf8'), bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** Whether a kept value is `text` (an etcd value read again): the same text when kept whole, else the same prefix, size and sha256. */
export function isKeptValueOf(kept: KeptValue, text: string): boolean {
  if (kept.sha256 === '') return kept.value === text;
  return text.startsWith(kept.value) && Buffer.byteLength(text, 'utf8') === kept.bytes && sha256Hex(text) === kept.sha256;
}

/** A value as a store row reads back (`value`, `value_bytes`, `value_sha256`, sql/290). */
export function storedKept(row: { value: string; value_bytes: number | string; value_sha256: string }): KeptValue {
  return { value: row.value, bytes: Number(row.value_bytes), sha256: row.value_sha256 };
}

type KeptColumns<C extends string> = Record<C, string> & Partial<Record<`${C}_bytes`, number> & Record<`${C}_sha256`, string>>;

/** `column` of a row (and `column_bytes`, `column_sha256` when only its prefix is kept), as the store keeps `text` (sql/290). */
export function keptColumns<C extends 'value' | 'prev_value'>(column: C, text: string): KeptColumns<C> {
  const kept = keptValue(text);
  const out = { [column]: kept.value } as KeptColumns<C>;
  if (kept.sha256 !== '') Object.assign(out, { [`${column}_bytes`]: kept.bytes, [`${column}_sha256`]: kept.sha256 });
  return out;
}

/**
 * What a quarantine entry's proof binds of its value (core/proof.ts quarantineRowMac): the sha256 of the text kept,
 * and, when that is only a prefix, the whole value's size and sha256 too — the one string binds every column that
 * says what the value was. A value kept whole binds as before the bound existed (its sha256), so earlier proofs hold.
 * exporters/sql/quarantine_check_rows.sql computes the same from the stored columns.
 */
export function quarantineValueDigest(kept: KeptValue): string {
  const text = sha256Hex(kept.value);
  return kept.sha256 === '' ? text : `${text}/${kept.bytes}/${kept.sha256}`;
}
