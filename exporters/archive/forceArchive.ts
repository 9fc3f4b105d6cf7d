// The force-release archiver of one etcd cluster: every /sys/force/<id>
// record becomes one object in the object-locked archive bucket (COMPLIANCE,
// seven years, set on the object itself), chained to the previous record of
// its cluster (hashChain.ts), long before the record's 24 h lease ends. It
// reads etcd directly — a range read of the prefix, woken by a watch and
// repeated on a short interval — so it depends on nothing but etcd and S3.
//
// Safe with more than one archiver: objects are written with If-None-Match,
// the content of a link is deterministic, and a refused put re-reads the head.
// An alarm (HealthState + gauge) is raised while a record older than
// `alarmAfterMs` is not archived.
//
// Only a record carrying the lock API's proof (core/proof.ts: a MAC with
// the origin secret over every field, its id the one its key names) is a
// force-release. Anyone with write access to etcd can put a /sys/force/ key
// naming two operators who never approved anything; such a record is never
// written into the archive (COMPLIANCE objects can never be deleted, and the
// chain would vouch for it): it raises the foreign-write alarm, is logged,
// and stays in the event log, where the tailer records it as foreign.
import { hasValidForceProof } from '../../core/proof.js';
import type { Etcd3, Watcher } from 'etcd3';
import type { Client } from 'minio';
import type { EtcdCluster } from '../../core/config.js';
import { createEtcdClient } from '../../core/etcd.js';
import { LockauditError } from '../../core/errors.js';
import { decodeValue, ForceRecordSchema, PREFIX } from '../../core/keyspace.js';
import type { Logger } from '../../core/logger.js';
import { alarm, alarmName as catalogAlarmName } from '../../platform/alarms.js';
import type { HealthState } from '../../platform/health.js';
import { archiveLockProblem, ARCHIVE_RETENTION_YEARS } from '../../platform/buckets.js';
import { archiveObjectName, chainRecord, EMPTY_HEAD, parseArchived, recordHash, type ArchivedForceRecord, type ChainHead } from '../hashChain.js';
import type { ExportMetrics } from '../exportMetrics.js';
import { putArchiveJson } from '../storage/objectStore.js';
import { etcdText } from '../../core/etcdText.js';

export const ARCHIVE_OBJECT_PREFIX = 'force/';

export interface ForceArchiverOptions {
  cluster: EtcdCluster;
  s3: Client;
  bucket: string;
  logger: Logger;
  health?: HealthState;
  metrics?: ExportMetrics;
  /** An etcd client to use (not closed by the archiver); default: one of its own. */
  etcd?: Etcd3;
  /** Keys read from etcd. Default /sys/force/ (tests use a sub-prefix of their own). */
  keyPrefix?: string;
  /** Object name prefix in the bucket. Default force/ */
  objectPrefix?: string;
  /** Range-read interval besides the watch. Default 2000 ms. */
  pollIntervalMs?: number;
  /** A record older than this (since its approval) and not archived raises the alarm. Default 1 h. */
  alarmAfterMs?: number;
  /** Retention set on each object. Default 7 years. */
  retentionYears?: number;
  /** Archive into a bucket without object lock (tests of the chain only). Default false: refused. */
  allowUnlocked?: boolean;
  /** Key of the lock API's proof (core/originSecret.ts): a record without a valid proof is never archived. */
  originSecret: Buffer;
}

export interface TickResult {
  archived: number;
  pending: number;
  oldestPendingAgeMs: number;
}

interface EtcdForceKv {
  key: string;
  value: string;
  createRevision: string;
  /** Approval wall time (ms); the etcd-less fallback is when we first saw it. */
  approvedAt: number;
  /** The record carries the API's proof: only then is it archived. */
  proven: boolean;
}

/** The name of the late-records alarm of a cluster's archiver. */
export const alarmName = (cluster: string): string => catalogAlarmName('LOCKAUDIT_ALARM_FORCE_ARCHIVE_LATE', { cluster });

export class ForceArchiver {
  /** The options with their defaults filled in. */
  readonly #settings: Required<Omit<ForceArchiverOptions, 'health' | 'metrics' | 'etcd'>> & Pick<ForceArchiverOptions, 'health' | 'metrics'>;
  /** Unproven records already reported (key@createRevision), so each is logged once. */
  readonly #refused = new Set<string>();
  readonly #etcd: Etcd3;
  readonly #ownsEtcd: boolean;
  #head: ChainHead | undefined;
  #archivedKeys = new Set<string>();
  #locked: boolean | undefined;
  #firstSeen = new Map<string, number>();
  #known: EtcdForceKv[] = [];
  #watcher: Watcher | undefined;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #closing = false;
  #closed: Promise<void> | undefined;
  #lastTick: Promise<TickResult> | undefined;

  constructor(options: ForceArchiverOptions) {
    this.#settings = {
      keyPrefix: PREFIX.force,
      objectPrefix: ARCHIVE_OBJECT_PREFIX,
      pollIntervalMs: 2_000,
      alarmAfterMs: 3_600_000,
      retentionYears: ARCHIVE_RETENTION_YEARS,
      allowUnlocked: false,
      ...options,
    };
    this.#ownsEtcd = options.etcd === undefined;
    this.#etcd = options.etcd ?? createEtcdClient(options.cluster);
  }

  get cluster(): string {
    return this.#settings.cluster.name;
  }

  objectName(r: Pick<ArchivedForceRecord, 'cluster' | 'createRevision' | 'key'>): string {
    return archiveObjectName(this.#settings.objectPrefix, r.cluster, r.createRevision, r.key);
  }

  /** Starts the watch and the loop; returns at once. */
  start(): void {
    if (this.#loop) return;
    this.#loop = this.#run();
  }

  async #run(): Promise<void> {
    try {
      this.#watcher = await this.#etcd.watch().prefix(this.#settings.keyPrefix).create();
      this.#watcher.on('put', () => this.#wake?.());
      this.#watcher.on('error', () => undefined); // the poll carries on; etcd3 reconnects the watch
    } catch (err) {
      this.#settings.logger.warn({ cluster: this.cluster, err: (err as Error).message }, 'force archiver: no watch, polling only');
    }
    while (!this.#closing) {
      this.#lastTick = this.tick();
      await this.#lastTick.catch(() => undefined);
      if (this.#closing) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#settings.pollIntervalMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  async #readEtcd(): Promise<EtcdForceKv[]> {
    const res = await this.#etcd.getAll().prefix(this.#settings.keyPrefix).exec();
    const now = Date.now();
    const kvs = res.kvs.map((kv) => {
      const key = etcdText(kv.key);
      const value = etcdText(kv.value);
      const record = decodeValue(ForceRecordSchema, value);
      if (!this.#firstSeen.has(key)) this.#firstSeen.set(key, now);
      const proven = record !== undefined && key.endsWith(`${PREFIX.force}${record.id}`) && hasValidForceProof(this.#settings.originSecret, record);
      return { key, value, createRevision: String(kv.create_revision), approvedAt: record?.approvedAt ?? (this.#firstSeen.get(key) as number), proven };
    });
    // Forget keys etcd no longer has (their lease ended): the set stays small.
    const live = new Set(kvs.map((k) => k.key));
    for (const k of this.#firstSeen.keys()) if (!live.has(k)) this.#firstSeen.delete(k);
    kvs.sort((a, b) => (BigInt(a.createRevision) < BigInt(b.createRevision) ? -1 : BigInt(a.createRevision) > BigInt(b.createRevision) ? 1 : 0));
    this.#known = kvs;
    return kvs;
  }

  /** Reads the chain head and the archived keys from the bucket (once, and after a refused put). */
  async #loadHead(): Promise<ChainHead> {
    const prefix = `${this.#settings.objectPrefix}${this.cluster}/`;
    const names: string[] = [];
    for await (const item of this.#settings.s3.listObjectsV2(this.#settings.bucket, prefix, true)) {
      if (item.name) names.push(item.name);
    }
    const keys = new Set<string>();
    let head = EMPTY_HEAD;
    // Every object is read once per process start: the set of archived keys
    // decides what is pending, whatever the revisions (a restored etcd reuses them).
    for (const name of names) {
      const parsed = parseArchived(await this.#readObject(name));
      if (typeof parsed === 'string') continue;
      keys.add(`${parsed.key}@${parsed.createRevision}`);
      if (parsed.seq > head.seq && recordHash(parsed) === parsed.hash) head = { seq: parsed.seq, hash: parsed.hash };
    }
    this.#archivedKeys = keys;
    this.#head = head;
    return head;
  }

  async #readObject(name: string): Promise<string> {
    const stream = await this.#settings.s3.getObject(this.#settings.bucket, name);
    const parts: Buffer[] = [];
    for await (const c of stream) parts.push(c as Buffer);
    return Buffer.concat(parts).toString('utf8');
  }

  async #checkLock(): Promise<boolean> {
    if (this.#locked !== undefined) return this.#locked;
    const problem = await archiveLockProblem(this.#settings.s3, this.#settings.bucket);
    if (problem && !this.#settings.allowUnlocked) {
      this.#settings.health?.raise(alarm('LOCKAUDIT_ALARM_FORCE_ARCHIVE_UNLOCKED', { cluster: this.cluster }, { problem }));
      throw new LockauditError('LOCKAUDIT_ERR_ARCHIVE_UNLOCKED', problem);
    }
    this.#locked = problem === undefined;
    return this.#locked;
  }

  /** Writes one link; false when an object of that name already exists (another archiver was first). */
  #put(record: ArchivedForceRecord): Promise<boolean> {
    return putArchiveJson(this.#settings.s3, this.#settings.bucket, this.objectName(record), record, this.#locked ? this.#settings.retentionYears : undefined);
  }

  /** One pass: archive every record etcd has that the bucket lacks, in commit order; update the alarm. */
  async tick(): Promise<TickResult> {
    const started = Date.now();
    let pending: EtcdForceKv[] = [];
    let archived = 0;
    try {
      const kvs = await this.#readEtcd();
      await this.#checkLock();
      if (!this.#head) await this.#loadHead();
      this.#refuse(kvs.filter((kv) => !kv.proven));
      pending = kvs.filter((kv) => kv.proven && !this.#archivedKeys.has(`${kv.key}@${kv.createRevision}`));
      while (pending.length > 0) {
        const kv = pending[0] as EtcdForceKv;
        const record = chainRecord(this.#head as ChainHead, this.cluster, kv);
        if (await this.#put(record)) {
          this.#head = { seq: record.seq, hash: record.hash };
          this.#archivedKeys.add(`${kv.key}@${kv.createRevision}`);
          this.#settings.metrics?.archived.inc({ cluster: this.cluster });
          this.#settings.metrics?.archiveLatency.observe({ cluster: this.cluster }, Math.max(0, Date.now() - kv.approvedAt) / 1000);
          archived++;
          pending.shift();
        } else {
          // Someone else wrote this name: re-read the chain, then go on.
          await this.#loadHead();
          pending = pending.filter((p) => !this.#archivedKeys.has(`${p.key}@${p.createRevision}`));
        }
      }
      return this.#alarm(pending, archived, started);
    } catch (err) {
      this.#settings.metrics?.archiveErrors.inc({ cluster: this.cluster });
      this.#settings.logger.warn({ cluster: this.cluster, err: (err as Error).message, pending: pending.length }, 'force archiver: pass failed, will retry');
      // Judge the alarm on the last etcd read when this one failed.
      pending = this.#known.filter((kv) => kv.proven && !this.#archivedKeys.has(`${kv.key}@${kv.createRevision}`));
      this.#alarm(pending, archived, started);
      throw err;
    }
  }

  /** Records without the API's proof: never archived; alarmed and logged once each. */
  #refuse(forged: readonly EtcdForceKv[]): void {
    for (const kv of forged) {
      const id = `${kv.key}@${kv.createRevision}`;
      if (this.#refused.has(id)) continue;
      this.#refused.add(id);
      this.#settings.logger.error(
        { cluster: this.cluster, key: kv.key, createRevision: kv.createRevision },
        "force archiver: a force record without the lock API's proof (forged); not archived",
      );
      this.#settings.health?.raise(
        alarm(
          'LOCKAUDIT_ALARM_FOREIGN_WRITE',
          { cluster: this.cluster },
          { what: 'force record', key: kv.key, revision: kv.createRevision, where: 'the event log' },
        ),
      );
    }
    if (this.#refused.size > 10_000) this.#refused.clear(); // bounded: at worst one is logged again
  }

  #alarm(pending: readonly EtcdForceKv[], archived: number, now: number): TickResult {
    const oldest = pending.reduce((min, p) => Math.min(min, p.approvedAt), Number.POSITIVE_INFINITY);
    const age = Number.isFinite(oldest) ? Math.max(0, now - oldest) : 0;
    this.#settings.metrics?.unarchived.set({ cluster: this.cluster }, pending.length);
    this.#settings.metrics?.oldestUnarchivedAge.set({ cluster: this.cluster }, age / 1000);
    const late = pending.filter((p) => now - p.approvedAt > this.#settings.alarmAfterMs).length;
    this.#settings.metrics?.lateUnarchived.set({ cluster: this.cluster }, late);
    if (late > 0) {
      const facts = { late, alarmAfterSeconds: Math.round(this.#settings.alarmAfterMs / 1000), oldestSeconds: Math.round(age / 1000) };
      this.#settings.health?.raise(alarm('LOCKAUDIT_ALARM_FORCE_ARCHIVE_LATE', { cluster: this.cluster }, facts));
    } else {
      this.#settings.health?.clear(alarmName(this.cluster));
    }
    return { archived, pending: pending.length, oldestPendingAgeMs: age };
  }

  /** Stops the loop and the watch (idempotent); waits for a pass in flight. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing = true;
      this.#wake?.();
      await this.#loop?.catch(() => undefined);
      await this.#watcher?.cancel().catch(() => undefined);
      if (this.#ownsEtcd) this.#etcd.close();
    })();
    return this.#closed;
  }
}
