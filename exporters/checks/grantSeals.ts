// Grant seals (issue 40 item 3; sql/250): a grant row changes when its hold
// ends, so no digest hashes `grants`, and every export checked every grant of
// its range against the signed events (grantsCheck.ts) — most of its time.
// Once a digest period is sealed and every grant granted in it has ended, its
// rows are final: the digest worker checks them once (digests/grantSealer.ts)
// and signs a seal, the period's row count and a hash of its rows, with the
// digest key. An export re-checks only the periods whose rows no longer hash
// to a valid seal: none, a bad signature, other rows, a row still open, or a
// restore recorded after the seal (its marks change rows; replaying an older
// seal must not hide them). Deleting seals only makes exports check again.
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { AuditStore } from '../../core/clickhouse.js';
import { digestKeyId, verifyDigestSignature, type DigestSigner } from '../../core/digestKey.js';
import { loadSql } from '../../platform/sql.js';
import type { TimeRange } from '../compliance/exportPlans.js';
import { canonicalJson } from '../hashChain.js';

const SQL = {
  hashes: loadSql('exporters/sql/grant_seal_hashes.sql'),
  seals: loadSql('exporters/sql/grant_seals.sql'),
  restored: loadSql('exporters/sql/grant_seal_restored.sql'),
};
export const GRANT_SEAL_KIND = 'lockaudit-grant-seal';
/** Seals read per cluster and export at most: past it, later periods are checked in full. */
const SEALS_READ_MAX = 100_000;

export interface GrantSealBody {
  v: 1;
  kind: typeof GRANT_SEAL_KIND;
  cluster: string;
  periodStart: string;
  periodEnd: string;
  /** Grants granted in the period (decimal). */
  rows: string;
  /** grant_seal_hashes.sql's hash of those rows. */
  sha256: string;
  sealedAt: string;
  keyId: string;
}

/** One period's grants as the store holds them now. */
export interface PeriodGrants {
  periodStartMs: number;
  rows: string;
  open: string;
  sha256: string;
}

/** The grants of `cluster` per period of `periodMs` in [fromMs, toMs) (aligned periods; periods without grants are absent). */
export async function periodGrants(store: AuditStore, cluster: string, fromMs: number, toMs: number, periodMs: number): Promise<PeriodGrants[]> {
  const rows = await store.rows<Omit<PeriodGrants, 'periodStartMs'> & { periodStartMs: string }>(SQL.hashes.text, { cluster, fromMs, toMs, periodMs });
  return rows.map((r) => ({ ...r, periodStartMs: Number(r.periodStartMs) }));
}

/** A seal's body and signature, as stored. */
export function signGrantSeal(body: GrantSealBody, signer: DigestSigner): { body: string; signature: string } {
  const text = canonicalJson(body);
  return { body: text, signature: signer.sign(Buffer.from(text)) };
}

/** The seal body when `signature` is the key's over exactly `text` and it is a seal's shape; else undefined. */
export function readGrantSeal(text: string, signature: string, publicKey: KeyObject): GrantSealBody | undefined {
  if (!verifyDigestSignature(publicKey, Buffer.from(text), signature)) return undefined;
  let b: Partial<GrantSealBody>;
  try {
    b = JSON.parse(text) as Partial<GrantSealBody>;
  } catch {
    return undefined;
  }
  const ok =
    b.v === 1 &&
    b.kind === GRANT_SEAL_KIND &&
    b.keyId === digestKeyId(publicKey) &&
    canonicalJson(b) === text &&
    [b.cluster, b.periodStart, b.periodEnd, b.rows, b.sha256, b.sealedAt].every((x) => typeof x === 'string');
  return ok ? (b as GrantSealBody) : undefined;
}

/** The public key a signer's seals verify with. */
export const sealKey = (signer: Pick<DigestSigner, 'publicKeyPem'>): KeyObject => createPublicKey(signer.publicKeyPem);

/** Whether a period's grants as they are now are what `seal` signed, and final. */
export const sealHolds = (seal: GrantSealBody | undefined, now: PeriodGrants | undefined): boolean =>
  seal !== undefined && now !== undefined && now.open === '0' && seal.rows === now.rows && seal.sha256 === now.sha256;

/**
 * The parts of `range` whose grants of `cluster` must be checked against the events in full: all of it but the
 * periods of `periodMs` whose grants are, now, what a valid seal signed (adjacent parts merged, in order). Also says
 * how many periods a seal covered.
 */
export async function unsealedStretches(
  store: AuditStore,
  cluster: string,
  range: TimeRange,
  o: { publicKey: KeyObject; periodMs: number },
): Promise<{ stretches: TimeRange[]; sealedPeriods: number }> {
  const P = o.periodMs;
  const from = Math.floor(range.fromMs / P) * P;
  const to = Math.ceil(range.toMs / P) * P;
  const now = new Map((await periodGrants(store, cluster, from, to, P)).map((p) => [p.periodStartMs, p]));
  // A restore recorded after a seal marks rows it may cover: that seal no longer counts (nor an older one replayed).
  const [restored] = await store.rows<{ lastMs: string }>(SQL.restored.text, { cluster });
  const lastRestoreMs = Number(restored?.lastMs ?? 0);
  const sealed = new Set<number>();
  for (const row of await store.rows<{ body: string; signature: string }>(SQL.seals.text, { cluster, fromMs: from, toMs: to, limit: SEALS_READ_MAX })) {
    const seal = readGrantSeal(row.body, row.signature, o.publicKey);
    if (!seal || seal.cluster !== cluster) continue;
    const start = Date.parse(seal.periodStart);
    if (Date.parse(seal.periodEnd) - start !== P || start % P !== 0 || Date.parse(seal.sealedAt) <= lastRestoreMs) continue;
    if (sealHolds(seal, now.get(start))) sealed.add(start);
  }
  const stretches: TimeRange[] = [];
  for (let s = from; s < to; s += P) {
    if (sealed.has(s)) continue;
    const part = { fromMs: Math.max(s, range.fromMs), toMs: Math.min(s + P, range.toMs) };
    const last = stretches[stretches.length - 1];
    if (last && last.toMs === part.fromMs) last.toMs = part.toMs;
    else stretches.push(part);
  }
  return { stretches, sealedPeriods: sealed.size };
}
