// Signed paging cursors, the one mechanism of every report that pages by
// keyset (grant history, quarantine): a cursor is base64url JSON of
// [kind, ...fields] followed by an HMAC-SHA256 (16 bytes, base64url) under a
// server secret (LOCKAUDIT_CURSOR_SECRET). A cursor carries what the first
// page fixed (its window, a digest of its filters): unsigned, a hand-made one
// could widen the window past LOCKAUDIT_MAX_WINDOW_DAYS or page other
// filters. A forged, edited or other report's cursor is refused (400) before
// any of its values reach a query.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { LockauditError } from '../core/errors.js';

/** Characters of the signature at the cursor's end: 16 bytes of HMAC-SHA256, base64url. */
const MAC_CHARS = 22;

function mac(payload: string, secret: Uint8Array): string {
  return createHmac('sha256', secret).update(payload).digest().subarray(0, 16).toString('base64url');
}

/** The key cursors are signed with: the configured secret, else a random one (a cursor then pages only on the process that issued it). */
export function cursorKey(secret: string | undefined): Uint8Array {
  return secret ? Buffer.from(secret) : randomBytes(32);
}

/** A short digest of the filters a cursor belongs to (key order does not matter; undefined is null). */
export function filterDigest(filters: Record<string, unknown>): string {
  const canonical = JSON.stringify(
    Object.keys(filters)
      .sort()
      .map((k) => [k, filters[k] ?? null]),
  );
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
}

export function cursorError(reason: string): LockauditError {
  return new LockauditError('LOCKAUDIT_ERR_REPORT_CURSOR', `querystring.cursor: ${reason}; start again without a cursor`);
}

/** Signs `fields` as a cursor of `kind` (e.g. 'grants/1': a report and its layout version). */
export function sealCursor(kind: string, fields: readonly unknown[], secret: Uint8Array): string {
  const payload = Buffer.from(JSON.stringify([kind, ...fields])).toString('base64url');
  return payload + mac(payload, secret);
}

/** The fields of a cursor of `kind` this API signed; anything else is a 400 naming the cursor. The caller checks each field's shape. */
export function openCursor(text: string, kind: string, secret: Uint8Array): unknown[] {
  const payload = text.slice(0, -MAC_CHARS);
  const given = Buffer.from(text.slice(-MAC_CHARS));
  const expected = Buffer.from(mac(payload, secret));
  if (text.length <= MAC_CHARS || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw cursorError('is not a cursor this API issued (unsigned, edited, or signed with another LOCKAUDIT_CURSOR_SECRET)');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw cursorError('is not a cursor this API issued');
  }
  if (!Array.isArray(parsed) || parsed[0] !== kind) throw cursorError(`is not a cursor of this report`);
  return parsed.slice(1) as unknown[];
}
