// The one CSV writer (RFC 4180, CRLF): every CSV the project hands out (a page
// of grant history, the risk register, a compliance export) is written by
// csvLine, so each neutralises formulas the same way. 64-bit values arrive
// here as decimal strings and are written as text.

export type Cell = string | number | boolean | null | undefined;

// A cell starting with one of these is run as a formula by spreadsheet
// programs: prefix it with a quote so a hostile value stays text.
const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(value: Cell): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) || text !== text.trim() ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV record, with its CRLF. */
export function csvLine(cells: readonly Cell[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

export function toCsv(header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  return csvLine(header) + rows.map(csvLine).join('');
}
