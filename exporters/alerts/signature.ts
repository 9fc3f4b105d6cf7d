// Signed deliveries: X-Lockaudit-Signature: t=<ms>,v1=<hex HMAC-SHA256 of
// "<t>.<body>"> with the sink's secret. The timestamp lets a receiver refuse
// replays outside a window; compare in constant time.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-lockaudit-signature';

export function sign(secret: string, body: string, atMs: number): string {
  const mac = createHmac('sha256', secret).update(`${atMs}.${body}`).digest('hex');
  return `t=${atMs},v1=${mac}`;
}

/** True when `header` is a valid signature of `body` under `secret`. */
export function verify(secret: string, body: string, header: string | undefined): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!m) return false;
  const expected = Buffer.from(sign(secret, body, Number(m[1])).split('v1=')[1] ?? '', 'hex');
  const given = Buffer.from(m[2] ?? '', 'hex');
  return expected.length === given.length && timingSafeEqual(expected, given);
}
