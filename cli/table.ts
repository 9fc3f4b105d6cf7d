// Plain-text tables and values for a terminal. Every cell is made printable:
// holders and keys can come from writes that bypassed the API, and a control
// character (an escape sequence) must not reach the reader's terminal.

export type TableCell = string | number | boolean | null | undefined;

/** A cell as text: control characters shown as `?`, empty for null. */
export function cellText(value: TableCell): string {
  if (value === null || value === undefined) return '';
  return String(value).replace(/[\x00-\x1f\x7f-\x9f]/g, '?');
}

/** Columns padded to their widest cell, two spaces apart, no trailing blanks. */
export function renderTable(header: readonly string[], rows: readonly (readonly TableCell[])[]): string {
  const text = rows.map((r) => header.map((_, i) => cellText(r[i])));
  const widths = header.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] as string).length)));
  return [header, ...text]
    .map(
      (r) =>
        `${r
          .map((c, i) => c.padEnd(widths[i] as number))
          .join('  ')
          .trimEnd()}\n`,
    )
    .join('');
}

/** A duration in ms, short: 850ms, 12.3s, 4m05s, 2h07m, 3d04h. */
export function duration(ms: number | null): string {
  if (ms === null) return '';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  const two = (n: number): string => String(n).padStart(2, '0');
  if (s < 3600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${two(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${two(Math.floor((s % 86_400) / 3600))}h`;
}
