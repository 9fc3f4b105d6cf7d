// Paging through grant history the way a client does: every page of a query,
// JSON (the items) and Arrow (the number of pages), following nextCursor.
import { grantHistory, type GrantHistoryDeps, type GrantHistoryParams, type GrantItem } from '../../reports/grantHistory/index.js';
import { grantHistoryArrow } from '../../reports/grantHistory/arrow.js';

/** Every item of `q`, `limit` per page. */
export async function allPages(deps: GrantHistoryDeps, q: GrantHistoryParams, limit: number, nowMs: number): Promise<GrantItem[]> {
  const items: GrantItem[] = [];
  let cursor: string | undefined;
  do {
    const p = await grantHistory(deps, { ...q, limit, ...(cursor ? { cursor } : {}) }, nowMs);
    items.push(...p.items);
    cursor = p.nextCursor ?? undefined;
  } while (cursor);
  return items;
}

/** How many Arrow pages of `limit` grants `q` takes (each stream drained). */
export async function arrowPageCount(deps: GrantHistoryDeps, q: GrantHistoryParams, limit: number, nowMs: number): Promise<number> {
  let pages = 0;
  let cursor: string | undefined;
  do {
    const p = await grantHistoryArrow(deps, { ...q, limit, format: 'arrow', ...(cursor ? { cursor } : {}) }, nowMs);
    p.stream.resume();
    pages += 1;
    cursor = p.nextCursor ?? undefined;
  } while (cursor);
  return pages;
}
