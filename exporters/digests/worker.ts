// The digest worker of one cluster (docs/digests.md#tamper-evident-digests): every sealed period
// gets one signed digest in the object-locked archive bucket, chained to the
// previous one; a digested period whose events changed since (a late replay,
// a restore's marks, a spooled grant shipped late) gets a new digest that
// supersedes it. Nothing is overwritten (If-None-Match, COMPLIANCE).
//
// Crash-safe by construction: the chain in the bucket is the only state. A
// run starts where the last digest ended, so a worker killed at any point
// skips no period; two workers race on the next seq's object name and the
// loser re-reads the chain.
//
// Sealing: the tailer writes /sys/clock about once a second; a period
// [start, end) is sealed once a clock write with time ≥ end + settle is
// captured (at or below the checkpoint). Its end position is the highest
// (timeline, revision) of a captured clock write with time < end: the
// period holds the changes etcd committed between its bounding clock writes.
import { createPublicKey } from 'node:crypto';
import type { Client } from 'minio';
import type { AuditStore } from '../../core/clickhouse.js';
import { keyringOf, type DigestKeyring, type DigestRecovery, type DigestSigner } from '../../core/digestKey.js';
import { LockauditError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { alarm, alarmName } from '../../platform/alarms.js';
import { archiveLockProblem, ARCHIVE_RETENTION_YEARS } from '../../platform/buckets.js';
import type { HealthState } from '../../platform/health.js';
import { loadSql } from '../../platform/sql.js';
import { MANIFEST_SUFFIX, parseManifest } from '../storage/manifest.js';
import { objectSha256, putArchiveJson, readObjectText, withRetry } from '../storage/objectStore.js';
import {
  comparePositions,
  DIGEST_KIND,
  DIGEST_OBJECT_PREFIX,
  digestHash,
  DIGEST_VERSION,
  digestObjectName,
  GENESIS_HASH,
  keyTrail,
  manifestSignatureProblem,
  parseDigest,
  signDigest,
  type Digest,
  type DigestBody,
  type DigestHistoryObject,
  type Position,
} from './format.js';
import { sealGrantPeriod } from './grantSealer.js';
import { explainChange, provenRestores, restoresAfter } from './explain.js';
import { hashPeriodEvents, periodRecord, rangeParams, sameRecord } from './periodContent.js';
import type { DigestMetrics } from './metrics.js';

export interface DigestWorkerOptions {
  cluster: string;
  store: AuditStore;
  s3: Client;
  /** The object-locked archive bucket. */
  bucket: string;
  /** Where the Parquet history lives (its manifests name each file's sha256). */
  historyBucket: string;
  /** The key this worker signs with (a rotation's next key and a recovery below move the chain's key on). */
  signer: DigestSigner;
  /** The key as it is now, read each time the chain is read (`lockaudit keys recover` makes a new one). Default: `signer`. */
  ownSigner?: () => DigestSigner;
  /** A rotation's next key, read each run (core/digestKey.ts nextDigestSigner): the next digest hands signing over to it, signed by both. */
  nextSigner?: () => DigestSigner | undefined;
  /** Every key the deployment has signed with, read each run: the chain's older digests and the manifests they name. Default: the signers' own. */
  keyring?: () => DigestKeyring;
  /** A recovery the operator authorized, read each run (core/digestKey.ts authorizedRecovery): a chain whose key was lost goes on under `signer`. */
  recovery?: () => DigestRecovery | undefined;
  /** Told once the chain has handed signing over to the next key (the data dir's next key becomes its key). */
  handedOver?: (keyId: string) => void;
  /** Told once a recovery digest is stored: the authorization is spent. */
  recovered?: (lostKeyId: string) => void;
  logger: Logger;
  health?: HealthState;
  metrics?: DigestMetrics;
  periodMs: number;
  settleMs: number;
  /** Digested periods re-checked for changes each run. */
  lookbackPeriods: number;
  /** Sealed periods without a digest before the alarm. */
  alarmAfterPeriods: number;
  pollIntervalMs?: number;
  /** Object name prefix in the archive bucket. Default digests/ */
  objectPrefix?: string;
  /** Write into a bucket without object lock (tests that attack the chain). Default false: refused. */
  allowUnlocked?: boolean;
  /** Most periods sealed per run (bounds one run's work; the next run goes on). Default 1000. */
  maxPeriodsPerRun?: number;
  /** Most digested periods whose grants a run tries to seal (grantSealer.ts; each try runs the grants check over it). Default 24. */
  grantSealsPerRun?: number;
  /**
   * How far a captured /sys/clock write may be dated ahead of this worker's own clock and still bound a period.
   * No period ending after now + this is sealed; a clock ahead of it raises LOCKAUDIT_ALARM_CLOCK_AHEAD. Default 5 000.
   */
  clockToleranceMs?: number;
  /** This worker's clock (tests). Default Date.now. */
  now?: () => number;
  /**
   * The key the tailer proves its restore gaps with (core/proof.ts): a sealed period that changed is re-signed only
   * for what the record explains (explain.ts), and the marks of a restore count only with its gap's proof. Without
   * it, no restore explains anything.
   */
  tailerSecret?: Buffer;
}

export interface DigestRunResult {
  written: number;
  superseded: number;
  /** Sealed periods still without a digest after this run. */
  behind: number;
  /** End of the last digested period (ISO), or null. */
  digestedThrough: string | null;
}

interface ClockStats {
  clocks: string;
  firstMs: string;
  newestMs: string;
  /** Clock writes dated after the reader's clock plus tolerance: counted, never a boundary. */
  aheadClocks: string;
  aheadNewestMs: string;
  aheadRevision: string;
}

/** The default tolerance for a clock write dated ahead of the reader's own clock. */
export const DEFAULT_CLOCK_TOLERANCE_MS = 5_000;

export async function readChain(
  s3: Client,
  bucket: string,
  cluster: string,
  prefix = DIGEST_OBJECT_PREFIX,
): Promise<Array<{ object: string; digest?: Digest; error?: string }>> {
  const names: string[] = [];
  await withRetry(
    async () => {
      names.length = 0;
      for await (const item of s3.listObjectsV2(bucket, `${prefix}${cluster}/`, true)) if (item.name) names.push(item.name);
    },
    { deadlineMs: 30_000 },
  );
  names.sort();
  const out: Array<{ object: string; digest?: Digest; error?: string }> = [];
  for (const object of names) {
    const parsed = parseDigest(await withRetry(() => readObjectText(s3, bucket, object), { deadlineMs: 30_000 }));
    out.push(typeof parsed === 'string' ? { object, error: parsed } : { object, digest: parsed });
  }
  return out;
}

export class DigestWorker {
  readonly #o: Required<
    Omit<DigestWorkerOptions, 'health' | 'metrics' | 'tailerSecret' | 'ownSigner' | 'nextSigner' | 'keyring' | 'recovery' | 'handedOver' | 'recovered'>
  > &
    Pick<DigestWorkerOptions, 'health' | 'metrics' | 'tailerSecret' | 'ownSigner' | 'nextSigner' | 'keyring' | 'recovery' | 'handedOver' | 'recovered'>;
  /** Sealed periods whose change the record does not explain, by period start: never re-signed, alarmed until explained or restart. */
  readonly #unexplained = new Map<string, string>();
  /** Periods whose grants this process sealed (or found sealed), and those found open: not before the time given. */
  readonly #grantsSealed = new Set<string>();
  readonly #grantsOpen = new Map<string, number>();
  /** Every digest of the chain by seq (as read, then as written). */
  #chain: Map<number, Digest> | undefined;
  #locked: boolean | undefined;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #closing = false;
  #closed: Promise<void> | undefined;
  /** The key the chain's next digest is signed by, and what that digest must carry (a hand-over, a recovery): set by #loadChain. */
  #signer: DigestSigner;
  #handover: DigestSigner | undefined;
  #recovery: DigestRecovery | undefined;

  constructor(options: DigestWorkerOptions) {
    this.#o = {
      pollIntervalMs: 10_000,
      objectPrefix: DIGEST_OBJECT_PREFIX,
      allowUnlocked: false,
      maxPeriodsPerRun: 1_000,
      grantSealsPerRun: 24,
      clockToleranceMs: DEFAULT_CLOCK_TOLERANCE_MS,
      now: Date.now,
      ...options,
    };
    this.#signer = options.signer;
  }

  get cluster(): string {
    return this.#o.cluster;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async #run(): Promise<void> {
    while (!this.#closing) {
      await this.tick().catch(() => undefined);
      if (this.#closing) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#o.pollIntervalMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  /**
   * The chain as stored, every object checked the way verify checks it (hash,
   * object name, link to the digest before, and each signature under the key
   * the chain was signed by at that point: keyTrail): anyone who can write the
   * bucket can add a new name, so a digest is only built on once it is proven
   * ours. On any bad object the chain is not adopted, the alarm is raised and
   * this cluster stops sealing (each run re-reads and fails again) rather than
   * extend a forged chain. Then which key signs next (#chooseKey).
   */
  async #loadChain(): Promise<Map<number, Digest>> {
    const next = this.#o.nextSigner?.();
    const own = this.#o.ownSigner?.() ?? this.#o.signer;
    const keyring = new Map(this.#o.keyring?.() ?? []);
    for (const s of [own, next]) if (s) keyring.set(s.keyId, createPublicKey(s.publicKeyPem));
    const chain = new Map<number, Digest>();
    const problems: string[] = [];
    for (const e of await readChain(this.#o.s3, this.#o.bucket, this.cluster, this.#o.objectPrefix)) {
      if (!e.digest) {
        problems.push(`${e.object}: unreadable (${e.error ?? 'unknown'})`);
        continue;
      }
      const d = e.digest;
      const problem =
        d.cluster !== this.cluster
          ? `names cluster ${d.cluster}`
          : digestHash(d) !== d.hash
            ? 'altered: its content does not match its hash'
            : e.object !== digestObjectName(d.cluster, d.seq, this.#o.objectPrefix)
              ? `stored as ${e.object}, but it is seq ${d.seq} of ${d.cluster}`
              : undefined;
      if (problem) problems.push(`${e.object}: ${problem}`);
      else if (chain.has(d.seq)) problems.push(`${e.object}: a second digest claims seq ${d.seq}`);
      else chain.set(d.seq, d);
    }
    const ordered = [...chain.values()].sort((a, b) => a.seq - b.seq);
    // A chain begun by a key this deployment does not know at all (its data dir lost with the keyring): not a forgery
    // to name digest by digest, but a lost key (#chooseKey says so).
    const first = ordered[0];
    if (problems.length === 0 && first && !first.recovery && !keyring.has(first.keyId)) {
      if (this.#o.recovery?.()?.lostKeyId !== first.keyId) this.#chooseKey(first.keyId, own, undefined, chain.size); // raises the alarm, throws
      throw new Error(
        `a recovery from key ${first.keyId} needs that key's public half in the keyring, to check the chain it goes on from (lockaudit keys recover --public-key)`,
      );
    }
    const trail = keyTrail(ordered, keyring);
    for (const [seq, problem] of trail.problems) problems.push(`${digestObjectName(this.cluster, seq, this.#o.objectPrefix)}: ${problem}`);
    for (const [seq, d] of chain) {
      const prev = seq === 1 ? undefined : chain.get(seq - 1);
      // A removed digest (seq - 1 absent) is verify's to name; the worker can still build on what is proven.
      if (seq === 1 ? d.prevHash !== GENESIS_HASH : prev !== undefined && d.prevHash !== prev.hash)
        problems.push(`${digestObjectName(this.cluster, seq, this.#o.objectPrefix)}: does not link to the digest before it`);
    }
    if (problems.length) {
      problems.sort();
      this.#chain = undefined;
      this.#o.health?.raise(
        alarm('LOCKAUDIT_ALARM_DIGEST_CHAIN_INVALID', { cluster: this.cluster }, { problem: problems[0] as string, count: problems.length }),
      );
      this.#o.logger.error(
        { cluster: this.cluster, problems },
        'digest: the stored chain holds an object that is not a valid digest of ours; not sealing this cluster until it is explained',
      );
      throw new Error(`digest chain of ${this.cluster} is invalid (${problems.length} problem(s)), not sealing: ${problems[0] as string}`);
    }
    this.#o.health?.clear(alarmName('LOCKAUDIT_ALARM_DIGEST_CHAIN_INVALID', { cluster: this.cluster }));
    this.#chooseKey(trail.currentKeyId, own, next, chain.size);
    this.#chain = chain;
    return chain;
  }

  /**
   * Which key signs the chain's next digest: ours when the chain is ours (a pending rotation's next key rides along,
   * to sign the hand-over); the next key once the chain has handed over to it; ours under a recovery the operator
   * authorized for exactly the chain's key. Any other key is a lost or replaced key: LOCKAUDIT_ALARM_DIGEST_KEY_UNKNOWN,
   * and nothing is signed — never a new chain by surprise.
   */
  #chooseKey(current: string | undefined, own: DigestSigner, next: DigestSigner | undefined, digests: number): void {
    this.#handover = undefined;
    this.#recovery = undefined;
    const unknown = alarmName('LOCKAUDIT_ALARM_DIGEST_KEY_UNKNOWN', { cluster: this.cluster });
    // The key handed over to in this process stays ours after its file moved (next became the key file).
    const holding = [this.#signer, own].find((k) => k.keyId === current);
    if (current === undefined || holding) {
      this.#signer = holding ?? own;
      if (next && next.keyId !== this.#signer.keyId) this.#handover = next;
    } else if (next && current === next.keyId) {
      this.#signer = next;
      this.#o.handedOver?.(next.keyId);
    } else {
      const recovery = this.#o.recovery?.();
      if (recovery?.lostKeyId !== current) {
        this.#o.health?.raise(alarm('LOCKAUDIT_ALARM_DIGEST_KEY_UNKNOWN', { cluster: this.cluster }, { chainKeyId: current, keyId: own.keyId, digests }));
        this.#o.logger.error(
          { cluster: this.cluster, chainKeyId: current, keyId: own.keyId },
          'digest: the chain is signed by a key this worker does not hold; not sealing (restore the key, or `lockaudit keys recover`)',
        );
        throw new Error(`the digest chain of ${this.cluster} is signed by key ${current}; this worker holds key ${own.keyId}: not sealing`);
      }
      this.#signer = own;
      this.#recovery = recovery;
    }
    this.#o.health?.clear(unknown);
  }

  /** A digest body signed by the chain's key, carrying a pending hand-over or recovery. */
  #sign(body: DigestBody): Digest {
    const handover = this.#handover;
    return signDigest(
      {
        ...body,
        keyId: this.#signer.keyId,
        ...(handover ? { handover: { nextKeyId: handover.keyId, nextPublicKeyPem: handover.publicKeyPem } } : {}),
        ...(this.#recovery ? { recovery: { ...this.#recovery } } : {}),
      },
      this.#signer,
      handover,
    );
  }

  /** After a digest is stored: a hand-over moves signing to the next key, a recovery is done. */
  #stored(d: Digest): void {
    this.#recovery = undefined;
    if (d.handover && this.#handover) {
      this.#signer = this.#handover;
      this.#handover = undefined;
      this.#o.logger.warn({ cluster: this.cluster, seq: d.seq, from: d.keyId, to: d.handover.nextKeyId }, 'digest: signing handed over to the next key');
      this.#o.handedOver?.(d.handover.nextKeyId);
    } else if (d.recovery) {
      this.#o.logger.warn(
        { cluster: this.cluster, seq: d.seq, lost: d.recovery.lostKeyId, key: d.keyId },
        'digest: the chain goes on under a new key (recovery)',
      );
      this.#o.recovered?.(d.recovery.lostKeyId);
    }
  }

  async #checkLock(): Promise<void> {
    if (this.#locked !== undefined) return;
    const problem = await archiveLockProblem(this.#o.s3, this.#o.bucket);
    if (problem && !this.#o.allowUnlocked) throw new LockauditError('LOCKAUDIT_ERR_ARCHIVE_UNLOCKED', problem);
    this.#locked = problem === undefined;
  }

  /** The head, the last regular (not superseding) digest, and the digest in force per period start. */
  #state(chain: Map<number, Digest>): { head?: Digest; regular?: Digest; effective: Map<string, Digest>; originals: Map<string, Digest>; named: Set<string> } {
    let head: Digest | undefined;
    let regular: Digest | undefined;
    const effective = new Map<string, Digest>();
    const originals = new Map<string, Digest>();
    const named = new Set<string>();
    for (const seq of [...chain.keys()].sort((a, b) => a - b)) {
      const d = chain.get(seq) as Digest;
      head = d;
      if (!d.supersedes) regular = d;
      effective.set(d.periodStart, d);
      if (!d.supersedes && !originals.has(d.periodStart)) originals.set(d.periodStart, d);
      for (const h of d.history) named.add(`${h.bucket}/${h.object}`);
    }
    return { head, regular, effective, originals, named };
  }

  /** One run: seal every sealed period after the last digest, then supersede changed recent ones. */
  async tick(): Promise<DigestRunResult> {
    const started = Date.now();
    try {
      await this.#checkLock();
      // A rotation begun since the chain was read (`lockaudit keys rotate`): read it again, to hand over.
      const next = this.#o.nextSigner?.();
      if (next && next.keyId !== this.#signer.keyId && next.keyId !== this.#handover?.keyId) this.#chain = undefined;
      const chain = this.#chain ?? (await this.#loadChain());
      let { head, regular, effective, originals, named } = this.#state(chain);
      const P = this.#o.periodMs;
      const since = regular ? Date.parse(regular.periodEnd) : 0;
      // Never seal the future: a clock write dated past this worker's own clock (plus tolerance) bounds nothing.
      const nowMs = this.#o.now();
      const notAfterMs = nowMs + this.#o.clockToleranceMs;
      const [clock] = await this.#o.store.rows<ClockStats>(loadSql('exporters/sql/digest_clock.sql').text, {
        cluster: this.cluster,
        sinceMs: since,
        notAfterMs,
      });
      this.#clockAhead(clock, nowMs);
      const newestMs = clock && BigInt(clock.clocks) > 0n ? Number(clock.newestMs) : undefined;
      let start = regular ? Date.parse(regular.periodEnd) : clock && BigInt(clock.clocks) > 0n ? Math.floor(Number(clock.firstMs) / P) * P : undefined;
      let written = 0;
      let superseded = 0;
      if (start !== undefined && newestMs !== undefined) {
        let pendingHistory: DigestHistoryObject[] | undefined;
        while (start + P + this.#o.settleMs <= newestMs && start + P <= notAfterMs && written < this.#o.maxPeriodsPerRun && !this.#closing) {
          pendingHistory ??= await this.#newHistory(named);
          const body = await this.#periodBody(head, regular, start, start + P, pendingHistory, null);
          const digest = this.#sign(body);
          if (!(await this.#put(digest))) {
            ({ head, regular, effective, originals, named } = this.#state(await this.#loadChain()));
            start = regular ? Date.parse(regular.periodEnd) : start;
            pendingHistory = undefined;
            continue;
          }
          chain.set(digest.seq, digest);
          this.#stored(digest);
          for (const h of digest.history) named.add(`${h.bucket}/${h.object}`);
          pendingHistory = [];
          head = digest;
          regular = digest;
          effective.set(digest.periodStart, digest);
          originals.set(digest.periodStart, digest);
          written++;
          this.#o.metrics?.written.inc({ cluster: this.cluster, kind: 'period' });
          start += P;
        }
      }
      // Late changes: the latest lookbackPeriods digested periods, re-counted, re-hashed when they moved — and, however
      // old, every period a proven restore recorded after its digest may have marked (a restore reaching far back).
      const restores = await provenRestores(this.#o.store, this.cluster, this.#o.tailerSecret);
      const byStart = [...effective.values()].sort((a, b) => Date.parse(b.periodStart) - Date.parse(a.periodStart));
      const recent = new Set(byStart.slice(0, this.#o.lookbackPeriods));
      // And every older period a spool line shipped late reached (however late: a spool is shipped when the API is back).
      const oldestRecent = byStart[Math.min(this.#o.lookbackPeriods, byStart.length) - 1];
      if (oldestRecent && byStart.length > this.#o.lookbackPeriods) {
        const since = Math.min(...[...recent].map((d) => Date.parse(d.createdAt)));
        const late = await this.#o.store.rows<{ periodStartMs: string }>(loadSql('exporters/sql/digest_late_spools.sql').text, {
          cluster: this.cluster,
          sinceMs: since,
          beforeMs: Date.parse(oldestRecent.periodStart),
          periodMs: P,
        });
        const byPeriod = new Map(byStart.map((d) => [Date.parse(d.periodStart), d]));
        for (const l of late) {
          const d = byPeriod.get(Number(l.periodStartMs));
          if (d) recent.add(d);
        }
      }
      for (const d of byStart) {
        const reach = restoresAfter(restores, Date.parse(d.createdAt)).some(
          (r) => d.events.revisionMax !== null && BigInt(d.events.revisionMax) >= r.fromRevision,
        );
        if (reach) recent.add(d);
      }
      for (const d of [...recent].sort((a, b) => Date.parse(a.periodStart) - Date.parse(b.periodStart))) {
        if (this.#closing) break;
        const fromMs = Date.parse(d.periodStart);
        const toMs = Date.parse(d.periodEnd);
        const [now] = await this.#o.store.rows<{ count: string; ingestedThroughMs: string }>(loadSql('exporters/sql/digest_stats.sql').text, {
          cluster: this.cluster,
          ...rangeParams(d.events.after, d.events.through, fromMs, toMs),
        });
        const count = now?.count ?? '0';
        const through = count === '0' ? null : (now?.ingestedThroughMs ?? null);
        // A gap or restore recorded (or removed) after sealing changes the period as much as a late event does.
        const record = await periodRecord(this.#o.store, this.cluster, fromMs, toMs);
        const recordMoved = !sameRecord(d, record);
        let events = d.events;
        if (count !== d.events.count || through !== d.events.ingestedThroughMs) {
          events = await hashPeriodEvents(
            this.#o.store,
            this.cluster,
            { after: d.events.after, through: d.events.through, fromMs, toMs },
            undefined,
            {},
            d.events.encoding,
          );
          if (events.sha256 === d.events.sha256 && events.count === d.events.count) events = d.events;
        }
        if (events === d.events && !recordMoved) {
          this.#unexplained.delete(d.periodStart);
          continue;
        }
        // A restore still writing its marks (its timeline record comes last): judge the period once it is done.
        if (restores.some((r) => !r.recorded)) continue;
        // Re-signed only for what the record explains, judged against the digest first signed for the period.
        const why = await explainChange(this.#o.store, originals.get(d.periodStart) ?? d, record, restores);
        if (!why.explained) {
          const problem = why.problem ?? 'changed after sealing';
          if (!this.#unexplained.has(d.periodStart))
            this.#o.logger.error(
              { cluster: this.cluster, period: d.periodStart, seq: d.seq, problem },
              'digest: a sealed period changed and the record does not explain it; not re-signed',
            );
          this.#unexplained.set(d.periodStart, problem);
          continue;
        }
        this.#unexplained.delete(d.periodStart);
        const body: DigestBody = {
          ...(await this.#periodBody(head, regular, fromMs, toMs, [], { seq: d.seq, hash: d.hash }, d.events)),
          events,
          reasons: why.reasons,
        };
        const digest = this.#sign(body);
        if (!(await this.#put(digest))) {
          await this.#loadChain();
          break; // another worker wrote that seq: the next run starts from the chain it left
        }
        chain.set(digest.seq, digest);
        this.#stored(digest);
        head = digest;
        effective.set(digest.periodStart, digest);
        superseded++;
        this.#o.metrics?.written.inc({ cluster: this.cluster, kind: 'supersede' });
        this.#o.logger.warn(
          { cluster: this.cluster, period: d.periodStart, supersedes: d.seq, seq: digest.seq, countBefore: d.events.count, countNow: events.count },
          'digest: a sealed period changed; superseding digest written',
        );
      }
      this.#reportUnexplained();
      // A restore still writing its marks changes rows: grants are sealed once it is done.
      if (!restores.some((r) => !r.recorded)) await this.#sealGrants(byStart);
      const digestedThrough = regular?.periodEnd ?? null;
      const behind = newestMs === undefined || start === undefined ? 0 : Math.max(0, Math.floor((newestMs - this.#o.settleMs - start) / P));
      this.#report(behind, digestedThrough, 'ok');
      this.#o.metrics?.runs.inc({ cluster: this.cluster, outcome: 'ok' });
      this.#o.metrics?.lastSuccess.set({ cluster: this.cluster }, Date.now() / 1000);
      this.#o.metrics?.runSeconds.observe({ cluster: this.cluster }, (Date.now() - started) / 1000);
      return { written, superseded, behind, digestedThrough };
    } catch (err) {
      this.#o.metrics?.runs.inc({ cluster: this.cluster, outcome: 'failed' });
      this.#o.logger.warn({ cluster: this.cluster, err: (err as Error).message }, 'digest run failed, will retry');
      const regular = this.#chain ? this.#state(this.#chain).regular : undefined;
      const behind = regular ? Math.max(0, Math.floor((Date.now() - this.#o.settleMs - Date.parse(regular.periodEnd)) / this.#o.periodMs)) : 0;
      this.#report(behind, regular?.periodEnd ?? null, `failed: ${(err as Error).message}`.slice(0, 200));
      throw err;
    }
  }

  /**
   * Grant seals (grantSealer.ts) for digested periods whose grants are final, oldest first, at most
   * grantSealsPerRun tries a run; a period found open is tried again an hour later (a lock held for days).
   */
  async #sealGrants(digested: readonly Digest[]): Promise<void> {
    let tries = 0;
    const now = this.#o.now();
    for (const d of [...digested].sort((a, b) => Date.parse(a.periodStart) - Date.parse(b.periodStart))) {
      if (this.#closing || tries >= this.#o.grantSealsPerRun) break;
      if (this.#grantsSealed.has(d.periodStart) || this.#unexplained.has(d.periodStart) || (this.#grantsOpen.get(d.periodStart) ?? 0) > now) continue;
      tries++;
      const r = await sealGrantPeriod(
        this.#o.store,
        this.#signer,
        this.cluster,
        { fromMs: Date.parse(d.periodStart), toMs: Date.parse(d.periodEnd) },
        { tailerSecret: this.#o.tailerSecret, now: this.#o.now },
      );
      if (r.outcome === 'open') this.#grantsOpen.set(d.periodStart, now + 3_600_000);
      else if (r.outcome === 'unproven') {
        // The export and verify name these grants; the period is simply checked in full by every export.
        this.#o.logger.warn(
          { cluster: this.cluster, period: d.periodStart, problems: r.problems },
          'digest: grants of a sealed period disagree with its events; not sealed',
        );
        this.#grantsOpen.set(d.periodStart, now + 3_600_000);
      } else {
        this.#grantsSealed.add(d.periodStart);
        if (r.outcome === 'sealed') this.#o.metrics?.written.inc({ cluster: this.cluster, kind: 'grant-seal' });
      }
    }
  }

  /** LOCKAUDIT_ALARM_DIGEST_CHANGED while a sealed period changed in a way the record does not explain (and the gauge a rule pages on). */
  #reportUnexplained(): void {
    this.#o.metrics?.changed.set({ cluster: this.cluster }, this.#unexplained.size);
    const name = alarmName('LOCKAUDIT_ALARM_DIGEST_CHANGED', { cluster: this.cluster });
    const [first] = [...this.#unexplained].sort(([a], [b]) => a.localeCompare(b));
    if (!first) {
      this.#o.health?.clear(name);
      return;
    }
    this.#o.health?.raise(
      alarm('LOCKAUDIT_ALARM_DIGEST_CHANGED', { cluster: this.cluster }, { count: this.#unexplained.size, period: first[0], problem: first[1] }),
    );
  }

  /** Raises LOCKAUDIT_ALARM_CLOCK_AHEAD while a captured clock write is dated past this worker's clock plus tolerance. */
  #clockAhead(clock: ClockStats | undefined, nowMs: number): void {
    const name = alarmName('LOCKAUDIT_ALARM_CLOCK_AHEAD', { cluster: this.cluster });
    if (!clock || BigInt(clock.aheadClocks) === 0n) {
      this.#o.health?.clear(name);
      return;
    }
    const aheadSeconds = Math.round((Number(clock.aheadNewestMs) - nowMs) / 1000);
    this.#o.health?.raise(
      alarm(
        'LOCKAUDIT_ALARM_CLOCK_AHEAD',
        { cluster: this.cluster },
        { count: clock.aheadClocks, revision: clock.aheadRevision, aheadSeconds, toleranceSeconds: this.#o.clockToleranceMs / 1000 },
      ),
    );
    this.#o.logger.error(
      { cluster: this.cluster, count: clock.aheadClocks, revision: clock.aheadRevision, aheadSeconds },
      "digest: captured clock writes dated ahead of this worker's clock; they bound no period",
    );
  }

  #report(behind: number, digestedThrough: string | null, lastRun: string): void {
    this.#o.metrics?.behind.set({ cluster: this.cluster }, behind);
    if (behind > this.#o.alarmAfterPeriods) {
      this.#o.health?.raise(
        alarm('LOCKAUDIT_ALARM_DIGEST_BEHIND', { cluster: this.cluster }, { behind, digestedThrough: digestedThrough ?? 'nothing yet', lastRun }),
      );
    } else {
      this.#o.health?.clear(alarmName('LOCKAUDIT_ALARM_DIGEST_BEHIND', { cluster: this.cluster }));
    }
  }

  async #put(d: Digest): Promise<boolean> {
    const name = digestObjectName(this.cluster, d.seq, this.#o.objectPrefix);
    return withRetry(() => putArchiveJson(this.#o.s3, this.#o.bucket, name, d, this.#locked ? ARCHIVE_RETENTION_YEARS : undefined), { deadlineMs: 60_000 });
  }

  async #periodBody(
    head: Digest | undefined,
    regular: Digest | undefined,
    fromMs: number,
    toMs: number,
    history: DigestHistoryObject[],
    supersedes: { seq: number; hash: string } | null,
    known?: Digest['events'],
  ): Promise<DigestBody> {
    let events = known;
    if (!events) {
      const after = regular?.events.through ?? null;
      const [clock] = await this.#o.store.rows<Position>(loadSql('exporters/sql/digest_boundary.sql').text, {
        cluster: this.cluster,
        sinceMs: fromMs,
        beforeMs: toMs,
      });
      let through = clock ?? after;
      if (after && through && comparePositions(through, after) < 0) through = after;
      if (!through) throw new Error(`no /sys/clock write of ${this.cluster} in its first period ${new Date(fromMs).toISOString()}`);
      events = await hashPeriodEvents(this.#o.store, this.cluster, { after, through, fromMs, toMs });
    }
    const { gaps, restores } = await periodRecord(this.#o.store, this.cluster, fromMs, toMs);
    return {
      v: DIGEST_VERSION,
      kind: DIGEST_KIND,
      cluster: this.cluster,
      seq: (head?.seq ?? 0) + 1,
      periodStart: new Date(fromMs).toISOString(),
      periodEnd: new Date(toMs).toISOString(),
      events,
      history,
      gaps,
      restores,
      supersedes,
      prevHash: head?.hash ?? GENESIS_HASH,
      createdAt: new Date().toISOString(),
      keyId: this.#signer.keyId,
    };
  }

  /**
   * History files of this cluster complete (manifest written) and not yet
   * named by a digest, each hashed here: the history bucket is not locked, so
   * a manifest's sha256 is a claim. A file that is not the one its manifest
   * describes is not named (the alarm says which); the digest after its
   * re-export names it.
   */
  async #newHistory(named: Set<string>): Promise<DigestHistoryObject[]> {
    const out: DigestHistoryObject[] = [];
    const mismatched: Array<{ object: string; problem: string }> = [];
    const bucket = this.#o.historyBucket;
    if (!(await this.#o.s3.bucketExists(bucket))) return out;
    for (const dataset of ['grants', 'events']) {
      const manifests: string[] = [];
      for await (const item of this.#o.s3.listObjectsV2(bucket, `${dataset}/cluster=${this.cluster}/`, true))
        if (item.name?.endsWith(MANIFEST_SUFFIX)) manifests.push(item.name);
      for (const name of manifests.sort()) {
        const object = name.slice(0, -MANIFEST_SUFFIX.length);
        if (named.has(`${bucket}/${object}`)) continue;
        const m = parseManifest(await readObjectText(this.#o.s3, bucket, name));
        if (!m || m.object !== object) continue;
        // Only a manifest this key signed says a file is history: one placed by the bucket's credentials is named by no digest.
        // Only this worker's own key (or the one it is handing over to) names a new file: a retired key, which may have
        // leaked, cannot vouch for one (files it signed before its hand-over were named then).
        const unsigned = manifestSignatureProblem(
          m,
          keyringOf([this.#signer, ...(this.#handover ? [this.#handover] : [])].map((k) => createPublicKey(k.publicKeyPem))),
        );
        if (unsigned !== undefined) {
          mismatched.push({ object, problem: unsigned });
          continue;
        }
        const got = await withRetry(() => objectSha256(this.#o.s3, bucket, object), { deadlineMs: 60_000 });
        if (got === 'missing') mismatched.push({ object, problem: 'the file is missing' });
        else if (got.sha256 !== m.sha256 || got.bytes !== m.bytes)
          mismatched.push({
            object,
            problem: `sha256 ${got.sha256.slice(0, 12)}…, ${got.bytes} bytes; manifest says ${m.sha256.slice(0, 12)}…, ${m.bytes} bytes`,
          });
        else out.push({ bucket, object, sha256: got.sha256, bytes: got.bytes, rows: m.rows, dataset: m.dataset, date: m.date ?? '' });
      }
    }
    const first = mismatched[0];
    if (first) {
      this.#o.health?.raise(
        alarm('LOCKAUDIT_ALARM_DIGEST_HISTORY_MISMATCH', { cluster: this.cluster }, { object: `${bucket}/${first.object}`, problem: first.problem }),
      );
      this.#o.logger.error({ cluster: this.cluster, mismatched }, 'digest: history file(s) do not match their manifests; not naming them');
    } else {
      this.#o.health?.clear(alarmName('LOCKAUDIT_ALARM_DIGEST_HISTORY_MISMATCH', { cluster: this.cluster }));
    }
    return out;
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing = true;
      this.#wake?.();
      await this.#loop?.catch(() => undefined);
    })();
    return this.#closed;
  }
}
