// Waiver status, pure: days left from the register date to the waiver's
// expiry date. A waiver is valid through its expiry date (0 days left is
// still "expiring"); within 30 days it is expiring; past it, expired. An
// advisory class without a waiver date has no valid waiver: expired.

export type WaiverStatus = 'ok' | 'expiring' | 'expired';
/** A register row's status: its waiver's, or `unproven` when the class's latest definition is not the lock API's. */
export type RegisterStatus = WaiverStatus | 'unproven';
export const REGISTER_STATUSES: readonly RegisterStatus[] = ['ok', 'expiring', 'expired', 'unproven'];
export const EXPIRING_WITHIN_DAYS = 30;
const DAY_MS = 86_400_000;

export function waiverState(waiverExpires: string | undefined | null, registerDate: string): { daysLeft: number | null; status: WaiverStatus } {
  if (!waiverExpires) return { daysLeft: null, status: 'expired' };
  const daysLeft = Math.round((Date.parse(`${waiverExpires}T00:00:00Z`) - Date.parse(`${registerDate}T00:00:00Z`)) / DAY_MS);
  if (!Number.isFinite(daysLeft)) return { daysLeft: null, status: 'expired' };
  return { daysLeft, status: daysLeft < 0 ? 'expired' : daysLeft <= EXPIRING_WITHIN_DAYS ? 'expiring' : 'ok' };
}

/** The calendar date (YYYY-MM-DD) of an instant in a time zone. */
export function dateInZone(ms: number, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(new Date(ms));
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')}`;
}
