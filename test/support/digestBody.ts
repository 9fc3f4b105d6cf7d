// A regular digest body of cluster c1's i-th one-second period from t0, for chains built in memory (unit tests).
import type { DigestBody, DigestEvents } from '../../exporters/digests/format.js';

export function periodBody(i: number, t0: number, o: { events: DigestEvents; prevHash: string; keyId: string; createdAt?: string }): DigestBody {
  return {
    v: 1,
    kind: 'lockaudit-digest',
    cluster: 'c1',
    seq: i + 1,
    periodStart: new Date(t0 + i * 1000).toISOString(),
    periodEnd: new Date(t0 + (i + 1) * 1000).toISOString(),
    events: o.events,
    history: [],
    gaps: [],
    restores: [],
    supersedes: null,
    prevHash: o.prevHash,
    createdAt: o.createdAt ?? new Date(t0).toISOString(),
    keyId: o.keyId,
  };
}
