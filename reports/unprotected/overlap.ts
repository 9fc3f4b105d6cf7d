// Which protected grants overlapped an unprotected one, pure. Holds are
// half-open intervals [grantedAt, endedAt): a grant that starts the
// millisecond another ended did not overlap it. A hold without an end is
// still held (until `nowMs`).

export interface Interval {
  cluster: string;
  key: string;
  grantedAtMs: number;
  endedAtMs: number | null;
}

export function overlaps(a: Interval, b: Interval, nowMs: number): boolean {
  if (a.cluster !== b.cluster || a.key !== b.key) return false;
  const aEnd = a.endedAtMs ?? Math.max(nowMs, a.grantedAtMs + 1);
  const bEnd = b.endedAtMs ?? Math.max(nowMs, b.grantedAtMs + 1);
  return a.grantedAtMs < bEnd && b.grantedAtMs < aEnd;
}
