// `lockaudit verify`: checks the digest chain of each cluster the way an
// outsider would (docs/digests.md#tamper-evident-digests) — every digest present, unaltered and
// signed by the public key, the chain unbroken — then, per period in the
// range, that each Parquet history object a digest names exists with its
// sha256 (a day's file is named after the day: those of the range's days are
// checked wherever the chain names them) and, given the audit store, that ClickHouse's events still hash to
// the digest and its gaps and restores are the digest's — and that the range's grants, which exports read, agree
// with those events (grantsCheck.ts). One verdict per period; the first failing one is named.
import type { Client } from 'minio';
import type { AuditStore } from '../../core/clickhouse.js';
import type { DigestKeyring } from '../../core/digestKey.js';
import { HISTORY_EXPIRY_DAYS, HISTORY_EXPIRY_RULE_ID } from '../../platform/buckets.js';
import { loadSql } from '../../platform/sql.js';
import { hiddenNames } from '../archive/archiveVerify.js';
import { checkCopiesAgainstGrants, formatCopyProblem } from '../checks/copiesCheck.js';
import { checkQuarantine, formatQuarantineProblem } from '../checks/quarantineCheck.js';
import { checkGrantsAgainstEvents, formatGrantProblem } from '../checks/grantsCheck.js';
import { objectSha256, withRetry } from '../storage/objectStore.js';
import {
  describeKeyChange,
  DIGEST_OBJECT_PREFIX,
  EVENTS_ENCODING_V1,
  isEventsEncoding,
  walkChain,
  type Digest,
  type DigestHistoryObject,
  type KeyChange,
  type PeriodVerdict,
} from './format.js';
import { explainChange, provenRestores, type ProvenRestore } from './explain.js';
import { hashPeriodEvents, periodRecord, sameRecord } from './periodContent.js';
import { DEFAULT_CLOCK_TOLERANCE_MS, readChain } from './worker.js';

export interface DigestVerifyOptions {
  s3: Client;
  bucket: string;
  /** The keys this verifier trusts (handed over out of band): the chain's first key, and any a recovery moved to. */
  keyring: DigestKeyring;
  /** The keyring is the deployment's own (its data dir, its settings), not one handed to the verifier: said with every recovery. */
  deploymentKeyring?: boolean;
  clusters: readonly string[];
  fromMs: number;
  /** Default: the end of the last digested period. */
  toMs?: number;
  /** With it, events are re-hashed and periods past the chain's end are judged sealed or not. */
  store?: AuditStore;
  /** Needed to judge whether an undigested period is sealed (the worker's setting). */
  settleMs?: number;
  /** Period length for periods past the chain's end when the chain names none. */
  periodMs?: number;
  objectPrefix?: string;
  /**
   * How long after its end a period may stay unsealed before it fails: sealing
   * halted (recent /sys/clock rows deleted, the tailer stopped) must not pass
   * as "not sealed yet". Judged by this verifier's clock. Default
   * defaultMaxOpenMs(periodMs, settleMs).
   */
  maxOpenMs?: number;
  /** The verifier's clock (tests). Default Date.now. */
  now?: () => number;
  /** How far a digest may be signed before its period's end, or a period end after this verifier's clock (the worker's setting). Default 5 s. */
  clockToleranceMs?: number;
  /**
   * The key the tailer proves its restore gaps with: a period re-signed after sealing passes only when the record
   * explains the change (explain.ts), and a restore explains its marks only with its gap's proof. Without it, only
   * late spools explain anything.
   */
  tailerSecret?: Buffer;
  /** When the grants check finds problems, it runs again after this long and only those found twice count (a batch in flight). Default 5 000; 0: once. */
  recheckMs?: number;
}

/** The default bound on an unsealed period's age past its end: the period again plus three settle windows, at least five minutes (the worker polls, runs take time). */
export const defaultMaxOpenMs = (periodMs: number, settleMs: number): number => Math.max(5 * 60_000, periodMs + 3 * settleMs);

export interface PeriodResult {
  cluster: string;
  periodStart: string;
  periodEnd: string;
  /**
   * ok; unsealed (open: not sealed yet, within --max-open); expired (its only finding: history files the bucket's
   * lifecycle rule expired, `expired` says which and how old); stalled (not sealed long after it ended: sealing
   * stopped); fail (tampered: the record or the chain is not what was signed).
   */
  status: 'ok' | 'fail' | 'unsealed' | 'expired' | 'stalled';
  seq?: number;
  /** History files of the period expired by the history bucket's lifecycle rule (not a failure). */
  expired?: string[];
  events?: string;
  superseded: number[];
  /** Why the digest in force re-signed the period, as it states it (a proven restore's marks, a late spool). */
  reasons?: string[];
  problems: string[];
}

/** A superseding digest's stated reasons, as words. */
export function describeReasons(d: Pick<Digest, 'reasons'>): string[] {
  return (d.reasons ?? []).map((r) =>
    r.kind === 'restore' ? `restore ${r.generation} marked ${r.rows} row(s) rolled back` : `late spool: ${r.rows} unprotected grant line(s)`,
  );
}

/** A history file of a day in the range that a digest after the range named (the day's file is written the next night). */
export interface LaterHistoryResult {
  cluster: string;
  object: string;
  date: string;
  /** The digest that named it, and the period it covers. */
  seq: number;
  periodStart: string;
  status: 'ok' | 'fail' | 'expired';
  problems: string[];
}

/** Given the audit store: the range's grants checked against the events they were derived from (grantsCheck.ts). */
export interface GrantsResult {
  cluster: string;
  status: 'ok' | 'fail';
  problems: string[];
}

/**
 * The run's verdict and exit code: ok (0: every period ok, open or expired by the lifecycle rule), tampered (1: the
 * record or the chain is not what was signed), stalled (3: nothing tampered, but sealing stopped — periods or
 * captured changes unsealed longer than --max-open allows). Tampered wins over stalled. (2: bad usage.)
 */
export type VerifyVerdict = 'ok' | 'tampered' | 'stalled';
export const VERDICT_EXIT_CODES: Record<VerifyVerdict, number> = { ok: 0, tampered: 1, stalled: 3 };

export interface DigestVerifyResult {
  ok: boolean;
  verdict: VerifyVerdict;
  exitCode: number;
  periods: PeriodResult[];
  laterHistory: LaterHistoryResult[];
  /** Per cluster, with the audit store only: exports and the grants history file are read from `grants`, which no digest hashes. */
  grants: GrantsResult[];
  /** Problems tied to no period in the range (chain-level): each fails the run too (`stalled`: sealing stopped, nothing tampered). */
  problems: Array<{ cluster: string; detail: string; stalled?: boolean }>;
  /** Every change of the signing key the chains record (hand-overs, recoveries), whatever the range: said in every verification. */
  keyChanges: Array<KeyChange & { cluster: string }>;
  deploymentKeyring?: boolean;
  firstFailure?: { cluster: string; periodStart: string; detail: string };
}

const DAY_MS = 86_400_000;

/**
 * Each history file checked against its digest: problems (missing or altered: tampered), and those missing that the
 * deployment's own lifecycle rule expired (HISTORY_EXPIRY_DAYS, never the bucket's live configuration, which whoever
 * can write the bucket can change): the file's day ended at least that many days ago by the verifier's clock. The
 * file is written the night after its day and expires at the first midnight that many days after, so nothing the
 * rule has not yet taken is excused.
 */
async function historyProblems(s3: Client, history: readonly DigestHistoryObject[], nowMs: number): Promise<{ problems: string[]; expired: string[] }> {
  const problems: string[] = [];
  const expired: string[] = [];
  const seen = new Set<string>();
  for (const h of history) {
    if (seen.has(`${h.bucket}/${h.object}/${h.sha256}`)) continue;
    seen.add(`${h.bucket}/${h.object}/${h.sha256}`);
    const got = await withRetry(() => objectSha256(s3, h.bucket, h.object), { deadlineMs: 60_000 });
    if (got === 'missing') {
      const ageDays = Math.floor((nowMs - (Date.parse(`${h.date}T00:00:00.000Z`) + DAY_MS)) / DAY_MS);
      const rule = `the history bucket's lifecycle rule "${HISTORY_EXPIRY_RULE_ID}"`;
      if (Number.isFinite(ageDays) && ageDays >= HISTORY_EXPIRY_DAYS)
        expired.push(`history object ${h.bucket}/${h.object} expired under ${rule} (${HISTORY_EXPIRY_DAYS} days; written ${ageDays} days ago)`);
      else
        problems.push(
          `history object ${h.bucket}/${h.object} is missing (${rule} takes a file only ${HISTORY_EXPIRY_DAYS} days after its day; this one is ${ageDays} days old)`,
        );
    } else if (got.sha256 !== h.sha256)
      problems.push(
        `history object ${h.bucket}/${h.object} does not match its digest (sha256 ${got.sha256.slice(0, 12)}…, ${got.bytes} bytes; digest says ${h.sha256.slice(0, 12)}…, ${h.bytes} bytes)`,
      );
  }
  return { problems, expired };
}

async function eventProblems(store: AuditStore, d: Digest): Promise<string[]> {
  if (!isEventsEncoding(d.events.encoding)) return [`its events encoding ${JSON.stringify(d.events.encoding)} is none this verifier knows`];
  let notWhole = 0;
  const now = await hashPeriodEvents(
    store,
    d.cluster,
    { after: d.events.after, through: d.events.through, fromMs: Date.parse(d.periodStart), toMs: Date.parse(d.periodEnd) },
    undefined,
    { onNotWholeUnderV1: () => (notWhole += 1) },
    d.events.encoding,
  );
  const problems: string[] = [];
  if (notWhole > 0)
    problems.push(
      `${notWhole} event(s) say a value was kept as a prefix (or of another size), in a period sealed under ${EVENTS_ENCODING_V1} when every value was kept whole: edited since`,
    );
  if (now.sha256 !== d.events.sha256 || now.count !== d.events.count) {
    problems.push(
      `ClickHouse events no longer match the digest (${now.count} event(s) now, ${d.events.count} signed; sha256 ${now.sha256.slice(0, 12)}… vs ${d.events.sha256.slice(0, 12)}…)`,
    );
  }
  // Gaps and restores say which history is missing or rolled back: a removed gap hides a loss, a forged one excuses one.
  const record = await periodRecord(store, d.cluster, Date.parse(d.periodStart), Date.parse(d.periodEnd));
  if (!sameRecord(d, record)) {
    problems.push(
      `ClickHouse gaps or restores no longer match the digest (${record.gaps.length} gap(s) and ${record.restores.length} restore(s) now, ${d.gaps.length} and ${d.restores.length} signed)`,
    );
  }
  return problems;
}

export async function verifyDigests(o: DigestVerifyOptions): Promise<DigestVerifyResult> {
  const prefix = o.objectPrefix ?? DIGEST_OBJECT_PREFIX;
  const periods: PeriodResult[] = [];
  const laterHistory: LaterHistoryResult[] = [];
  const problems: DigestVerifyResult['problems'] = [];
  const grants: GrantsResult[] = [];
  const keyChanges: DigestVerifyResult['keyChanges'] = [];
  const nowMs = (o.now ?? Date.now)();
  const toleranceMs = o.clockToleranceMs ?? DEFAULT_CLOCK_TOLERANCE_MS;
  for (const cluster of o.clusters) {
    const entries = await readChain(o.s3, o.bucket, cluster, prefix);
    const hidden = await withRetry(() => hiddenNames(o.s3, o.bucket, `${prefix}${cluster}/`), { deadlineMs: 30_000 });
    const walk = walkChain(cluster, entries, o.keyring, prefix);
    keyChanges.push(...walk.keyChanges.map((c) => ({ cluster, ...c })));
    for (const name of [...hidden].sort())
      problems.push({ cluster, detail: `${name}: its current version is an S3 delete marker (the digest is hidden; a locked version survives)` });
    for (const p of walk.problems) problems.push({ cluster, detail: p });
    const regular = walk.periods;
    const bySeq = new Map(entries.flatMap((e) => (e.digest ? [[e.digest.seq, e.digest] as const] : [])));
    const restores = o.store ? await provenRestores(o.store, cluster, o.tailerSecret) : [];
    const last = regular[regular.length - 1];
    const lastEnd = last ? Date.parse(last.periodEnd) : undefined;
    const periodMs = last ? Date.parse(last.periodEnd) - Date.parse(last.periodStart) : o.periodMs;
    const toMs = o.toMs ?? lastEnd ?? o.fromMs;
    for (const p of regular) {
      const s = Date.parse(p.periodStart);
      const e = Date.parse(p.periodEnd);
      if (e <= o.fromMs || s >= toMs) continue;
      periods.push(await judge(o, p, nowMs, toleranceMs, { bySeq, restores }));
    }
    // A day's Parquet file is written after the day, so a digest after the range names it: check it with the range's periods.
    for (const p of regular) {
      if (Date.parse(p.periodStart) < toMs || !p.digest || p.problems.length) continue;
      for (const h of p.history) {
        const day = Date.parse(`${h.date}T00:00:00.000Z`);
        if (!Number.isFinite(day) || day + 86_400_000 <= o.fromMs || day >= toMs) continue;
        const found = await historyProblems(o.s3, [h], nowMs);
        const status = found.problems.length ? 'fail' : found.expired.length ? 'expired' : 'ok';
        laterHistory.push({
          cluster,
          object: `${h.bucket}/${h.object}`,
          date: h.date,
          seq: p.digest.seq,
          periodStart: p.periodStart,
          status,
          problems: [...found.problems, ...found.expired],
        });
      }
    }
    // Past the chain's end: every period up to `to` lacks a digest.
    if (toMs > (lastEnd ?? o.fromMs) && periodMs) {
      const sealedThrough = o.store ? await sealedThroughMs(o.store, cluster, o.settleMs ?? 0, nowMs + toleranceMs) : undefined;
      let s = lastEnd ?? Math.floor(o.fromMs / periodMs) * periodMs;
      if (s < o.fromMs) s += Math.floor((o.fromMs - s) / periodMs) * periodMs;
      for (; s < toMs; s += periodMs) {
        const e = s + periodMs;
        const base = { cluster, periodStart: new Date(s).toISOString(), periodEnd: new Date(e).toISOString(), superseded: [] };
        if (sealedThrough !== undefined && e > sealedThrough) {
          const openMs = nowMs - e;
          const maxOpenMs = o.maxOpenMs ?? defaultMaxOpenMs(periodMs, o.settleMs ?? 0);
          if (openMs <= maxOpenMs) periods.push({ ...base, status: 'unsealed', problems: [] });
          else
            periods.push({
              ...base,
              status: 'stalled',
              problems: [
                `not sealed ${Math.round(openMs / 1000)} s after it ended (more than the ${Math.round(maxOpenMs / 1000)} s allowed): sealing is halted (the tailer's /sys/clock writes stopped or were deleted)`,
              ],
            });
        } else
          periods.push({
            ...base,
            status: 'fail',
            problems: [
              `no digest${sealedThrough !== undefined ? ', though the period is sealed' : ''} (removed from the end of the chain, or the digest worker is behind)`,
            ],
          });
      }
    } else if (!periodMs && o.toMs !== undefined) {
      problems.push({ cluster, detail: 'no digest at all for this cluster' });
    }
    // A chain that stopped advancing: the store's clock writes seal periods after its end that have no digest, long
    // after they ended (by this verifier's clock). Judged whatever the range, since it is a fact of the chain.
    if (o.store && lastEnd !== undefined && periodMs) {
      const sealedThrough = await sealedThroughMs(o.store, cluster, o.settleMs ?? 0, nowMs + toleranceMs);
      const sealable = Math.floor((sealedThrough - lastEnd) / periodMs);
      const maxOpenMs = o.maxOpenMs ?? defaultMaxOpenMs(periodMs, o.settleMs ?? 0);
      const waitedMs = nowMs - (lastEnd + periodMs);
      if (sealable >= 1 && waitedMs > maxOpenMs) {
        problems.push({
          cluster,
          stalled: true,
          detail: `the chain ends at ${new Date(lastEnd).toISOString()}, yet the store's captured clock writes seal ${sealable} period(s) after it (through ${new Date(lastEnd + sealable * periodMs).toISOString()}), the first ended ${Math.round(waitedMs / 1000)} s ago, more than the ${Math.round(maxOpenMs / 1000)} s allowed: sealing has stopped`,
        });
      }
    }
    // The digests hash the events; exports read the grants derived from them: with the store, the range's grants too.
    if (o.store && toMs > o.fromMs) {
      const check = () =>
        checkGrantsAgainstEvents(
          o.store as AuditStore,
          { cluster },
          { fromMs: o.fromMs, toMs },
          { limit: 20, tailerSecret: o.tailerSecret, sealedBeforeMs: lastEnd ?? 0 },
        );
      let found = await check();
      // A change in flight (the tailer or the spool shipper writes a batch's events, then its grants) is not tampering:
      // only what is still wrong a moment later counts. Nothing excuses it for longer (ingested_at is no evidence).
      if (found.length && (o.recheckMs ?? 5_000) > 0) {
        await new Promise((r) => setTimeout(r, o.recheckMs ?? 5_000));
        const still = new Set((await check()).map(formatGrantProblem));
        found = found.filter((p) => still.has(formatGrantProblem(p)));
      }
      // Reports read copies of `grants` (key, holder, token): each must equal what was just checked.
      const copies = await checkCopiesAgainstGrants(o.store, cluster, { fromMs: o.fromMs, toMs }, 20);
      // The quarantine view: each undecodable change listed as captured, each entry backed or proven.
      const quarantine = await checkQuarantine(o.store, cluster, { fromMs: o.fromMs, toMs }, { tailerSecret: o.tailerSecret, limit: 20 });
      const all = [...found.map(formatGrantProblem), ...copies.map(formatCopyProblem), ...quarantine.map(formatQuarantineProblem)];
      grants.push({ cluster, status: all.length ? 'fail' : 'ok', problems: all });
    }
    // A verifier that checked nothing proves nothing (an empty or emptied chain, a range past it): say so and fail.
    if (!periods.some((p) => p.cluster === cluster && p.status !== 'unsealed') && !problems.some((p) => p.cluster === cluster)) {
      problems.push({
        cluster,
        detail: `no period verified from ${new Date(o.fromMs).toISOString()}${o.toMs !== undefined ? ` to ${new Date(o.toMs).toISOString()}` : ''}: no digest covers the range, so nothing was checked`,
      });
    }
  }
  const failing = periods.find((p) => p.status === 'fail') ?? periods.find((p) => p.status === 'stalled');
  const failingLater = laterHistory.find((h) => h.status === 'fail');
  const failingGrants = grants.find((g) => g.status === 'fail');
  const tampered = periods.some((p) => p.status === 'fail') || failingLater !== undefined || failingGrants !== undefined || problems.some((p) => !p.stalled);
  const verdict: VerifyVerdict = tampered ? 'tampered' : failing || problems.length ? 'stalled' : 'ok';
  const firstFailure = failing
    ? { cluster: failing.cluster, periodStart: failing.periodStart, detail: failing.problems.join('; ') }
    : failingLater
      ? { cluster: failingLater.cluster, periodStart: `${failingLater.date} (history file)`, detail: failingLater.problems.join('; ') }
      : problems[0]
        ? { cluster: problems[0].cluster, periodStart: '(chain)', detail: problems[0].detail }
        : failingGrants
          ? { cluster: failingGrants.cluster, periodStart: '(grants)', detail: failingGrants.problems.join('; ') }
          : undefined;
  return {
    ok: verdict === 'ok',
    verdict,
    exitCode: VERDICT_EXIT_CODES[verdict],
    periods,
    laterHistory,
    grants,
    problems,
    keyChanges,
    ...(o.deploymentKeyring ? { deploymentKeyring: true } : {}),
    firstFailure,
  };
}

async function judge(
  o: DigestVerifyOptions,
  p: PeriodVerdict,
  nowMs: number,
  toleranceMs: number,
  chain: { bySeq: Map<number, Digest>; restores: ProvenRestore[] },
): Promise<PeriodResult> {
  const problems = [...p.problems];
  const d = p.digest;
  // Never sealed ahead: a period is signed only once it ended by the worker's clock, and none ends after this verifier's.
  const endMs = Date.parse(p.periodEnd);
  if (d && Date.parse(d.createdAt) + toleranceMs < endMs)
    problems.push(`signed at ${d.createdAt}, before its period ended: sealed from a clock dated ahead of the worker's`);
  if (endMs > nowMs + toleranceMs) problems.push(`the period ends after this verifier's clock (${new Date(nowMs).toISOString()}): sealed ahead of time`);
  let expired: string[] = [];
  let stalled: string | undefined;
  if (d && problems.length === 0) {
    const history = await historyProblems(o.s3, p.history, nowMs);
    problems.push(...history.problems);
    expired = history.expired;
    if (o.store) problems.push(...(await eventProblems(o.store, d)));
    // Re-signed after sealing: only for what the record explains, checked here against the digest first signed.
    const original = p.superseded.length ? chain.bySeq.get(Math.min(...p.superseded)) : undefined;
    if (o.store && original && problems.length === 0) {
      const record = await periodRecord(o.store, d.cluster, Date.parse(d.periodStart), Date.parse(d.periodEnd));
      const why = await explainChange(o.store, original, record, chain.restores);
      if (!why.explained && chain.restores.some((r) => !r.recorded))
        stalled = 'a proven restore is still writing its marks: verify again once its timeline is recorded';
      else if (!why.explained)
        problems.push(`changed after sealing (re-signed by seq ${d.seq}) in a way the record does not explain: ${why.problem ?? 'unknown'}`);
    }
  }
  if (!d && problems.length === 0) problems.push('no digest');
  return {
    cluster: p.cluster,
    periodStart: p.periodStart,
    periodEnd: p.periodEnd,
    status: problems.length ? 'fail' : stalled ? 'stalled' : expired.length ? 'expired' : 'ok',
    seq: d?.seq,
    events: d?.events.count,
    superseded: p.superseded,
    ...(d && p.superseded.length ? { reasons: describeReasons(d) } : {}),
    ...(expired.length ? { expired } : {}),
    problems: stalled && !problems.length ? [stalled] : problems,
  };
}

/** The end of the last sealed period's settle bound: the newest captured /sys/clock write minus settle. */
async function sealedThroughMs(store: AuditStore, cluster: string, settleMs: number, notAfterMs: number): Promise<number> {
  const [row] = await store.rows<{ clocks: string; newestMs: string }>(loadSql('exporters/sql/digest_clock.sql').text, { cluster, sinceMs: 0, notAfterMs });
  return row && row.clocks !== '0' ? Number(row.newestMs) - settleMs : 0;
}

/** The word a line starts with, per status: FAIL only for what was tampered with. */
const PERIOD_WORD: Record<PeriodResult['status'], string> = { ok: 'ok  ', unsealed: 'open', expired: 'expired', stalled: 'STALLED', fail: 'FAIL' };

/** One line per period, then the first failure. */
export function formatVerifyResult(r: DigestVerifyResult): string[] {
  const lines: string[] = [];
  for (const p of r.periods) {
    const head = `${PERIOD_WORD[p.status]}  ${p.cluster} ${p.periodStart}..${p.periodEnd}`;
    const seq = p.seq !== undefined ? ` seq ${p.seq}` : '';
    const sup = p.superseded.length
      ? ` (supersedes seq ${p.superseded.join(', ')}: changed after sealing${p.reasons?.length ? `: ${p.reasons.join('; ')}` : ''})`
      : '';
    if (p.status === 'ok') lines.push(`${head}${seq} events ${p.events}${sup}`);
    else if (p.status === 'expired') lines.push(`${head}${seq} events ${p.events}${sup}: ${(p.expired ?? []).join('; ')}`);
    else if (p.status === 'unsealed') lines.push(`${head} not sealed yet`);
    else lines.push(`${head}${seq}: ${p.problems.join('; ')}`);
  }
  for (const h of r.laterHistory) {
    const head = `${PERIOD_WORD[h.status]}  ${h.cluster} history ${h.date} ${h.object} (named by seq ${h.seq}, period ${h.periodStart})`;
    lines.push(h.status === 'ok' ? head : `${head}: ${h.problems.join('; ')}`);
  }
  for (const g of r.grants) {
    if (g.status === 'ok')
      lines.push(
        `ok    ${g.cluster} grants: every grant of the range agrees with the events it was derived from, its key, holder and token copies with it, and the quarantine with the captured changes`,
      );
    else for (const p of g.problems) lines.push(`FAIL  ${g.cluster} grants: ${p}`);
  }
  for (const p of r.problems) lines.push(`${p.stalled ? PERIOD_WORD.stalled : PERIOD_WORD.fail}  ${p.cluster} chain: ${p.detail}`);
  // A recovery is only as good as the keyring that vouches for it: the deployment's own can be edited by its insiders.
  const own = r.deploymentKeyring
    ? " — vouched for by the deployment's own keyring, which whoever writes its data dir can edit: verify with --public-key and the keys you were handed"
    : '';
  for (const c of r.keyChanges)
    lines.push(`${c.kind === 'recovery' ? 'RECOVERED' : 'key '}  ${c.cluster} chain: ${describeKeyChange(c)}${c.kind === 'recovery' ? own : ''}`);
  if (r.firstFailure) lines.push(`first failing period: ${r.firstFailure.cluster} ${r.firstFailure.periodStart}: ${r.firstFailure.detail}`);
  else lines.push(`verified ${r.periods.filter((p) => p.status === 'ok' || p.status === 'expired').length} period(s): chain intact, signatures valid`);
  return lines;
}
