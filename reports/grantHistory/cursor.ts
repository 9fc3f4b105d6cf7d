// The grant-history cursor: the sort key of the last row served, the pinned
// upper time bound of the first page, and a digest of the filters. Paging is
// keyset paging on (granted_at, cluster, key, grant_revision, spool_id) —
// columns a grant never changes — so a grant that ends between two pages
// keeps its place, and grants granted after the first page (beyond the
// pinned bound) never shift the pages: every grant is served once.
// A cursor is signed (HMAC-SHA256 with a server secret): a forged or edited
// cursor is refused before any of its values reach a query.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { INSTANT_MAX_MS } from '../../core/instant.js';
import { LockauditError } from '../../core/errors.js';
import { parseToken } from '../../core/token.js';

export interface CursorPosition {
  grantedAtMs: number;
  cluster: string;
  key: string;
  grantRevision: string;
  spoolId: string;
}

export interface Cursor {
  after: CursorPosition;
  /** The window's upper bound, fixed when the first page was served. */
  toMs: number;
  /** Digest of the filters the cursor belongs to. */
  filters: string;
}

const VERSION = 1;

export function filterDigest(filters: Record<string, unknown>): string {
  const canonical = JSON.stringify(Object.keys(filters).sort().map((k) => [k, filters[k] ?? null]));
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
}

/** Characters of the signature at the cursor's end: 16 bytes of HMAC-SHA256, base64url. */
const MAC_CHARS = 22;

function mac(payload: string, secret: Uint8Array): string {
  return createHmac('sha256', secret).update(payload).digest().subarray(0, 16).toString('base64url');
}

export function encodeCursor(c: Cursor, secret: Uint8Array): string {
  const p = c.after;
  const payload = Buffer.from(JSON.stringify([VERSION, p.grantedAtMs, p.cluster, p.key, p.grantRevision, p.spoolId, c.toMs, c.filters])).toString('base64url');
  return payload + mac(payload, secret);
}

function bad(reason: string): LockauditError {
  return new LockauditError('LOCKAUDIT_ERR_REPORT_CURSOR', `querystring.cursor: ${reason}; start again without a cursor`);
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= INSTANT_MAX_MS;
const isStr = (v: unknown, max = 1024): v is string => typeof v === 'string' && v.length <= max;

/** Decodes a cursor and checks it belongs to `filters`; every failure is a 400 naming the cursor. */
export function decodeCursor(text: string, filters: string, secret: Uint8Array): Cursor {
  const payload = text.slice(0, -MAC_CHARS);
  const given = Buffer.from(text.slice(-MAC_CHARS));
  const expected = Buffer.from(mac(payload, secret));
  if (text.length <= MAC_CHARS || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw bad('is not a cursor this API issued (unsigned, edited, or signed with another LOCKAUDIT_CURSOR_SECRET)');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw bad('is not a cursor this API issued');
  }
  if (!Array.isArray(parsed) || parsed.length !== 8 || parsed[0] !== VERSION) throw bad('is not a cursor this API issued');
  const [, grantedAtMs, cluster, key, grantRevision, spoolId, toMs, digest] = parsed as unknown[];
  if (!isInt(grantedAtMs) || !isStr(cluster, 64) || !isStr(key, 512) || !isStr(grantRevision, 20) || parseToken(grantRevision) === undefined || !isStr(spoolId, 256) || !isInt(toMs) || !isStr(digest, 64)) {
    throw bad('is not a cursor this API issued');
  }
  if (digest !== filters) throw bad('was issued for other filters');
  return { after: { grantedAtMs, cluster, key, grantRevision, spoolId }, toMs, filters: digest };
}
