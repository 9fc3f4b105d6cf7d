// Renderers shared by the reports: HTML escaping and the reading of
// ClickHouse's numeric and time columns. CSV is grants/csv.ts, the one writer
// the reports and the exports share.
import type { Cell } from '../grants/csv.js';

export function escapeHtml(value: Cell): string {
  if (value === null || value === undefined) return '';
  return String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

export const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** A 64-bit or nullable numeric column from ClickHouse (quoted string, number or null) as a JS number, for small values only (ms, counts). */
export function num(value: string | number | null | undefined): number | null {
  if (value === null || value === undefined) return null;
  const n = typeof value === 'number' ? value : Number(value);
  return Number.isFinite(n) ? n : null;
}
