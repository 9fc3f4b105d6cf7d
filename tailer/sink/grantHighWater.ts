// The audit store's side of the lock API's shared high-water (issue 21 item 5):
// the highest fencing token of an API grant the tailer ever captured for a
// cluster, on every etcd timeline — rolled back ones included, since those
// tokens were issued. Read from grant_high_water (sql/060), which a
// materialized view on `events` keeps: one row per cluster, no scan of the
// history. The lock engine reads it at start, periodically and after etcd
// was unreachable, never per acquire; roles/ wires it in.
// Whoever can write the store can write that row: one row of 2^64 − 1 would
// seal every API process and make the recovery advance run past the last
// epoch. So with the origin secret the token is taken only when a captured
// grant explains it — a hold value carrying the API's proof for its key,
// whose epoch and revision make that very token. An unexplained one is
// reported (the caller alarms) and the highest explained token below it is
// used instead (0 when none is; after 2 000 unexplained rows it fails closed:
// grants are refused until someone looks). Not bounded: a genuine hold value copied into a store row at
// a higher revision of its own epoch still explains a token above the real
// ones; it can only seal (until a two-person advance), never lower a token.
import type { AuditStore } from '../../core/clickhouse.js';
import { decodeValue, HoldValueSchema } from '../../core/keyspace.js';
import { hasValidProof } from '../../core/proof.js';
import { makeToken, splitToken } from '../../core/token.js';
import { loadSql } from '../../platform/sql.js';

const SQL = { grantHighWater: loadSql('tailer/sql/grantHighWater.sql'), candidates: loadSql('tailer/sql/grantTokenCandidates.sql') };
/** Captured grants below an unexplained token read a page at a time, and how many pages before failing closed. */
const FALLBACK_CANDIDATES = 50;
const FALLBACK_PAGES = 40;

export interface CapturedGrantHighWater {
  /** The highest token (epoch × 2^48 + revision) of an API grant captured for `cluster`; 0n when none. */
  highestGrantToken(cluster: string): Promise<bigint>;
}

export interface GrantHighWaterChecks {
  /** Key of the lock API's proofs: without it every token is taken as stored. */
  originSecret?: Buffer;
  /** Told when the stored high-water is explained by no proven grant (`epoch`: the claimed token's; the token itself is never told). */
  onUnexplained?: (facts: { cluster: string; epoch: number; usedEpoch: number }) => void;
}

interface Candidate {
  key: string;
  value: string;
  revision: string;
  token: string;
}

const TOKEN = /^(0|[1-9][0-9]{0,19})$/;

export function capturedGrantHighWater(store: AuditStore, checks: GrantHighWaterChecks = {}): CapturedGrantHighWater {
  const { originSecret } = checks;
  /** A captured grant row whose hold value the API proved for its key, and whose epoch and revision make its token. */
  const explains = (c: Candidate): boolean => {
    if (!originSecret || !TOKEN.test(c.token)) return false;
    const hold = decodeValue(HoldValueSchema, c.value);
    if (!hold || !hasValidProof(originSecret, c.key, hold)) return false;
    try {
      return makeToken(hold.epoch, BigInt(c.revision)) === BigInt(c.token);
    } catch {
      return false; // a revision beyond 48 bits makes no token
    }
  };
  const candidates = (cluster: string, token: bigint, exact: boolean): Promise<Candidate[]> =>
    store.rows<Candidate>(SQL.candidates.text, {
      cluster,
      token: token.toString(),
      revision: splitToken(token).revision.toString(),
      exact: exact ? 1 : 0,
      limit: exact ? 10 : FALLBACK_CANDIDATES,
    });

  return {
    async highestGrantToken(cluster) {
      const rows = await store.rows<{ token: string }>(SQL.grantHighWater.text, { cluster });
      const token = rows[0]?.token ?? '0';
      if (!TOKEN.test(token)) throw new Error(`grant_high_water returned ${JSON.stringify(token)} for ${cluster}, not a token`);
      const claimed = BigInt(token);
      if (claimed === 0n || !originSecret) return claimed;
      if ((await candidates(cluster, claimed, true)).some(explains)) return claimed;
      // The highest explained token below, a page at a time; 0 only when no captured grant below explains one.
      let below = claimed;
      let used: bigint | undefined;
      for (let page = 0; page < FALLBACK_PAGES && used === undefined; page++) {
        const rows = await candidates(cluster, below, false);
        const found = rows.find(explains);
        if (found) used = BigInt(found.token);
        else if (rows.length < FALLBACK_CANDIDATES) used = 0n;
        else below = BigInt((rows.at(-1) as Candidate).token);
      }
      checks.onUnexplained?.({ cluster, epoch: Number(splitToken(claimed).epoch), usedEpoch: Number(splitToken(used ?? 0n).epoch) });
      // Fail closed: so many unexplained rows that no proven one was reached (the lock API refuses grants, alarmed).
      if (used === undefined)
        throw new Error(`more than ${FALLBACK_PAGES * FALLBACK_CANDIDATES} captured grants of ${cluster} below its high-water are explained by no proof`);
      return used;
    },
  };
}
