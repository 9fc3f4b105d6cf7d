// One reading of an instant for every date the API and CLI accept: RFC 3339
// date-time with an explicit zone (Z or ±hh:mm), years 1970–2299.
//
// Why not the JSON-Schema `date-time` format plus Date.parse: the format
// accepts a leap second (23:59:60), which Date cannot hold (Date.parse gives
// NaN and a later toISOString() throws), while Date.parse accepts what the
// format refuses or reads it differently ("1" is 2001-01-01 local time,
// "2020-02-30" is 1 March, no offset is local time). One parser, used by the
// validator and by the code after it, cannot disagree with itself.

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2}))$/;

/** The earliest and latest instants accepted: what ClickHouse DateTime64 holds, and nothing before the epoch. */
export const INSTANT_MIN_MS = 0;
export const INSTANT_MAX_MS = Date.UTC(2300, 0, 1) - 1;

export const INSTANT_RULE = 'an RFC 3339 date-time with a zone (Z or ±hh:mm), e.g. 2025-11-29T03:12:00Z, years 1970–2299, no leap second';

/** Milliseconds since the epoch, or undefined when `text` is not an instant this project accepts. */
export function parseInstant(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const fraction = m[7] ? Math.floor(Number(`0${m[7]}`) * 1000) : 0;
  let offsetMin = 0;
  if (m[9]) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  // Date rolls 30 February over into March: a day the month lacks is refused.
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  date.setUTCHours(hour, minute, second, fraction);
  const ms = date.getTime() - offsetMin * 60_000;
  return ms >= INSTANT_MIN_MS && ms <= INSTANT_MAX_MS ? ms : undefined;
}

/** True for a calendar date YYYY-MM-DD that exists, years 1970–2299. */
export function isCalendarDate(text: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(text) && parseInstant(`${text}T00:00:00Z`) !== undefined;
}

/**
 * For exports, whose ranges are often whole days: also a bare date
 * (YYYY-MM-DD) or a date-time without a zone, both read as UTC — never as
 * the local time of whichever machine runs the API or CLI.
 */
export function parseInstantOrUtc(text: string): number | undefined {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return parseInstant(`${text}T00:00:00Z`);
  if (/^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?$/.test(text)) return parseInstant(`${text}Z`);
  return parseInstant(text);
}

/** The text form parseInstantOrUtc reads, as a JSON-Schema pattern. */
export const INSTANT_OR_UTC_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt][0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})?)?$';
