// `lockaudit archive verify`: walks each cluster's hash chain in the archive
// bucket (current versions) and reports every missing or altered record.
// The chain is an unsigned sha256 chain, so whoever can write the bucket can
// append a well-linked record after the head; hence, with the origin secret,
// each archived record's own proof is checked (a record the lock API did not
// write is `unproven`), and with the audit log both directions are: every
// proven force record the tailer captured is archived (`not-archived`; this
// also catches a removed last record, which a chain alone cannot), and every
// archived record is one the audit log holds as proven (`not-in-audit-log`).
// Records younger than the grace period are left out of both directions: the
// archiver and the tailer each take a moment.
import type { Client } from 'minio';
import type { AuditStore } from '../../core/clickhouse.js';
import { decodeValue, ForceRecordSchema, forceKey } from '../../core/keyspace.js';
import { hasValidForceProof } from '../../core/proof.js';
import { ARCHIVE_OBJECT_PREFIX } from './forceArchive.js';
import { loadSql } from '../../platform/sql.js';
import { archiveObjectName, parseArchived, verifyChain, type ChainEntry, type ChainProblem } from '../hashChain.js';
import { readObjectText, withRetry } from '../storage/objectStore.js';

export interface ExpectedRecord {
  cluster: string;
  key: string;
  createRevision: string;
  value: string;
  /** Older than the grace period: the archive must hold it by now (default true). */
  settled?: boolean;
}

export interface ClusterVerification {
  cluster: string;
  records: number;
  lastSeq: number;
  /** Archived records absent from the audit log because their revision lies in a recorded gap (never capturable). */
  inGaps: number;
  problems: ChainProblem[];
}

/** A gap the tailer recorded (revisions it could never capture): an archived record inside one is not expected in the audit log. */
export interface RecordedGap {
  cluster: string;
  from: bigint;
  to: bigint;
}

export interface VerifyResult {
  ok: boolean;
  clusters: ClusterVerification[];
}

export interface VerifyOptions {
  cluster?: string;
  objectPrefix?: string;
  /** The audit log's proven force records: each settled one absent or different is a problem, and each archived one not among them. */
  expected?: readonly ExpectedRecord[];
  /** Key of the lock API's proofs: each archived record's proof is checked. */
  originSecret?: Buffer;
  /** Archived records approved less than this long ago are not required in the audit log yet, ms (default 300 000). */
  graceMs?: number;
  /** The audit log's recorded gaps: with `expected`, a record archived from a revision inside one is counted, not a problem. */
  gaps?: readonly RecordedGap[];
}

async function listNames(s3: Client, bucket: string, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const item of s3.listObjectsV2(bucket, prefix, true)) if (item.name) names.push(item.name);
  return names.sort();
}

/**
 * Objects whose current version is a delete marker. A chain of current
 * versions cannot see its newest record hidden this way (nothing after it
 * links to it), so the versions are asked directly.
 */
export async function hiddenNames(s3: Client, bucket: string, prefix: string): Promise<Set<string>> {
  const hidden = new Set<string>();
  const versions = s3.listObjects(bucket, prefix, true, { IncludeVersion: true }) as AsyncIterable<{
    name?: string;
    isLatest?: unknown;
    isDeleteMarker?: boolean;
  }>;
  for await (const v of versions) if (v.name && v.isDeleteMarker && String(v.isLatest) === 'true') hidden.add(v.name);
  return hidden;
}

export async function verifyArchive(s3: Client, bucket: string, options: VerifyOptions = {}): Promise<VerifyResult> {
  const prefix = options.objectPrefix ?? ARCHIVE_OBJECT_PREFIX;
  const byClusterSeed = new Map<string, ChainEntry[]>();
  const listPrefix = options.cluster ? `${prefix}${options.cluster}/` : prefix;
  const names = await withRetry(() => listNames(s3, bucket, listPrefix), { deadlineMs: 30_000 });
  const hidden = await withRetry(() => hiddenNames(s3, bucket, listPrefix), { deadlineMs: 30_000 });
  for (const name of hidden) {
    const cluster = name.slice(prefix.length).split('/')[0] as string;
    if (!byClusterSeed.has(cluster)) byClusterSeed.set(cluster, []);
  }
  const byCluster = byClusterSeed;
  for (const name of names) {
    const cluster = name.slice(prefix.length).split('/')[0] as string;
    const text = await withRetry(() => readObjectText(s3, bucket, name), { deadlineMs: 30_000 });
    const parsed = parseArchived(text);
    const entry: ChainEntry = typeof parsed === 'string' ? { object: name, error: parsed } : { object: name, record: parsed };
    byCluster.set(cluster, [...(byCluster.get(cluster) ?? []), entry]);
  }
  for (const e of options.expected ?? []) if (!options.cluster || e.cluster === options.cluster) if (!byCluster.has(e.cluster)) byCluster.set(e.cluster, []);
  // A force record is archived once: a copy of a genuine (proven) record linked into a chain again — the same one
  // or another cluster's — is named by the object that repeats it.
  const firstById = new Map<string, string>();
  const repeats = new Map<string, string>();
  for (const [, entries] of [...byCluster.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    for (const e of entries) {
      const id = e.record?.record?.id;
      if (id === undefined) continue;
      const first = firstById.get(id);
      if (first === undefined) firstById.set(id, e.object);
      else repeats.set(e.object, first);
    }
  }
  const clusters: ClusterVerification[] = [];
  for (const [cluster, entries] of [...byCluster.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const problems = verifyChain(cluster, entries, (r) => archiveObjectName(prefix, r.cluster, r.createRevision, r.key));
    const archived = new Map(entries.flatMap((e) => (e.record ? [[`${e.record.key}@${e.record.createRevision}`, e.record] as const] : [])));
    for (const e of entries) {
      const first = repeats.get(e.object);
      if (first !== undefined && !problems.some((p) => p.object === e.object)) {
        problems.push({
          kind: 'duplicate',
          cluster,
          object: e.object,
          seq: e.record?.seq,
          detail: `${e.object}: repeats force record ${e.record?.record?.id ?? ''}, already archived as ${first}`,
        });
      }
    }
    const secret = options.originSecret;
    if (secret) {
      for (const e of entries) {
        const f = e.record ? decodeValue(ForceRecordSchema, e.record.value) : undefined;
        if (!e.record || problems.some((p) => p.object === e.object)) continue;
        if (!f || !hasValidForceProof(secret, f) || e.record.key !== forceKey(f.id)) {
          problems.push({
            kind: 'unproven',
            cluster,
            object: e.object,
            seq: e.record.seq,
            detail: `${e.object}: the record does not carry the lock API's proof (written into the bucket by hand, or edited)`,
          });
        }
      }
    }
    let inGaps = 0;
    if (options.expected) {
      const logged = new Set(options.expected.filter((x) => x.cluster === cluster).map((x) => `${x.key}@${x.createRevision}`));
      const settledBefore = Date.now() - (options.graceMs ?? 300_000);
      for (const e of entries) {
        const r = e.record;
        if (!r || logged.has(`${r.key}@${r.createRevision}`) || problems.some((p) => p.object === e.object)) continue;
        const approvedAt = r.record?.approvedAt;
        if (approvedAt !== undefined && approvedAt > settledBefore) continue; // the tailer may not have captured it yet
        // Put while no tailer could capture it (a compaction gap, a restore): the audit log says so, and its proof was checked above.
        const revision = BigInt(r.createRevision);
        if ((options.gaps ?? []).some((g) => g.cluster === cluster && g.from <= revision && revision <= g.to)) {
          inGaps++;
          continue;
        }
        problems.push({
          kind: 'not-in-audit-log',
          cluster,
          object: e.object,
          seq: r.seq,
          detail: `${e.object}: archived, but the audit log holds no proven force record ${r.key} at revision ${r.createRevision}`,
        });
      }
    }
    for (const exp of options.expected ?? []) {
      if (exp.cluster !== cluster || exp.settled === false) continue;
      const found = archived.get(`${exp.key}@${exp.createRevision}`);
      const object = archiveObjectName(prefix, cluster, exp.createRevision, exp.key);
      if (!found) {
        // Reported once: a record already named by the chain as missing or altered is not repeated.
        if (!problems.some((p) => p.object === object))
          problems.push({
            kind: 'not-archived',
            cluster,
            object,
            detail: `${exp.key} (revision ${exp.createRevision}) is in the audit log but not in the archive`,
          });
      } else if (found.value !== exp.value && !problems.some((p) => p.object === object)) {
        problems.push({ kind: 'altered', cluster, object, detail: `${object}: its value differs from the one the audit log recorded` });
      }
    }
    for (const object of [...hidden].filter((n) => n.startsWith(`${prefix}${cluster}/`)).sort()) {
      const note = 'its current version is an S3 delete marker (the record is hidden; its locked versions survive)';
      const named = problems.find((p) => p.object === object);
      if (named) named.detail = `${named.detail}; ${note}`;
      else problems.push({ kind: 'hidden', cluster, object, detail: `${object}: ${note}` });
    }
    const lastSeq = entries.reduce((m, e) => Math.max(m, e.record?.seq ?? 0), 0);
    clusters.push({ cluster, records: entries.length, lastSeq, inGaps, problems });
  }
  return { ok: clusters.every((c) => c.problems.length === 0), clusters };
}

/** The proven force records the audit log holds (the tailer's `force-record` puts), each `settled` when older than `graceMs`. */
export async function expectedFromAuditLog(store: AuditStore, options: { cluster?: string; graceMs?: number } = {}): Promise<ExpectedRecord[]> {
  const rows = await store.rows<Omit<ExpectedRecord, 'settled'> & { settled: number | string }>(loadSql('exporters/sql/force_records.sql').text, {
    cluster: options.cluster ?? '',
    beforeMs: Date.now() - (options.graceMs ?? 300_000),
  });
  return rows.map((r) => ({ cluster: r.cluster, key: r.key, createRevision: r.createRevision, value: r.value, settled: Number(r.settled) === 1 }));
}

/** The gaps the audit log recorded (compactions, restores), per cluster. */
export async function gapsFromAuditLog(store: AuditStore, options: { cluster?: string } = {}): Promise<RecordedGap[]> {
  const rows = await store.rows<{ cluster: string; fromRevision: string; toRevision: string }>(loadSql('exporters/sql/force_gaps.sql').text, {
    cluster: options.cluster ?? '',
  });
  return rows.map((r) => ({ cluster: r.cluster, from: BigInt(r.fromRevision), to: BigInt(r.toRevision) }));
}
