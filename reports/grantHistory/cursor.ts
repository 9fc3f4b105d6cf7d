// The grant-history cursor: the sort key of the last row served, the pinned
// upper time bound of the first page, and a digest of the filters. Paging is
// keyset paging on (granted_at, cluster, key, grant_revision, spool_id,
// timeline) — a grant's identity and grant time, which it never changes; the
// timeline tells apart a grant a restore rolled back from the grant etcd gave
// again at the same revision, which without it the next page skipped when the
// two fell on a page's edge — so a grant that ends between two pages
// keeps its place, and grants granted after the first page (beyond the
// pinned bound) never shift the pages: every grant is served once.
// Signed like every report cursor (reports/cursor.ts).
import { INSTANT_MAX_MS } from '../../core/instant.js';
import { parseToken } from '../../core/token.js';
import { cursorError, openCursor, sealCursor } from '../cursor.js';

export { filterDigest } from '../cursor.js';

export interface CursorPosition {
  grantedAtMs: number;
  cluster: string;
  key: string;
  grantRevision: string;
  spoolId: string;
  /** sql/065's timeline. A cursor issued before it was part of the position reads as the highest (after every timeline, as it paged then). */
  timeline: number;
}

export interface Cursor {
  after: CursorPosition;
  /** The window's upper bound, fixed when the first page was served. */
  toMs: number;
  /** Digest of the filters the cursor belongs to. */
  filters: string;
}

const KIND = 'grants/2';
const TIMELINE_MAX = 4_294_967_295; // UInt32

export function encodeCursor(c: Cursor, secret: Uint8Array): string {
  const p = c.after;
  return sealCursor(KIND, [p.grantedAtMs, p.cluster, p.key, p.grantRevision, p.spoolId, c.toMs, c.filters, p.timeline], secret);
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= INSTANT_MAX_MS;
const isStr = (v: unknown, max = 1024): v is string => typeof v === 'string' && v.length <= max;
const isTimeline = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= TIMELINE_MAX;

/** Decodes a cursor and checks it belongs to `filters`; every failure is a 400 naming the cursor. */
export function decodeCursor(text: string, filters: string, secret: Uint8Array): Cursor {
  const fields = openCursor(text, KIND, secret);
  // 8 fields; 7 from a cursor issued before the timeline joined the position.
  const [grantedAtMs, cluster, key, grantRevision, spoolId, toMs, digest, timeline = TIMELINE_MAX] = fields;
  if (
    (fields.length !== 7 && fields.length !== 8) ||
    !isTimeline(timeline) ||
    !isInt(grantedAtMs) ||
    !isStr(cluster, 64) ||
    !isStr(key, 512) ||
    !isStr(grantRevision, 20) ||
    parseToken(grantRevision) === undefined ||
    !isStr(spoolId, 256) ||
    !isInt(toMs) ||
    !isStr(digest, 64)
  ) {
    throw cursorError('is not a cursor this API issued');
  }
  if (digest !== filters) throw cursorError('was issued for other filters');
  return { after: { grantedAtMs, cluster, key, grantRevision, spoolId, timeline }, toMs, filters: digest };
}
