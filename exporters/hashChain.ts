// The force-release archive's hash chain, per etcd cluster: each archived
// record carries its sequence number, the hash of the previous record of its
// cluster, and its own hash over everything else it carries (canonical JSON:
// keys sorted). A removed record leaves a gap in `seq` and a successor whose
// prevHash names nothing; an altered one no longer matches its own hash or its
// successor's prevHash. Pure functions: verified by unit tests.
import { createHash } from 'node:crypto';
import { decodeValue, ForceRecordSchema, type ForceRecord } from '../core/keyspace.js';

export const GENESIS_HASH = '0'.repeat(64);
export const ARCHIVE_FORMAT_VERSION = 1;

export interface ArchivedForceRecord {
  v: typeof ARCHIVE_FORMAT_VERSION;
  cluster: string;
  /** 1, 2, 3… per cluster, in commit order. */
  seq: number;
  /** The etcd create revision of /sys/force/<id> (decimal): the commit order. */
  createRevision: string;
  /** The etcd key, /sys/force/<id>. */
  key: string;
  /** The etcd value exactly as committed. */
  value: string;
  /** The value decoded (null when it did not fit ForceRecordSchema: archived all the same). */
  record: ForceRecord | null;
  prevHash: string;
  hash: string;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** JSON with object keys sorted at every level: one text per value. */
export function canonicalJson(value: unknown): string {
  const normalize = (v: unknown): Json => {
    if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return v;
    if (Array.isArray(v)) return v.map(normalize);
    if (typeof v === 'object') {
      const out: { [k: string]: Json } = {};
      for (const k of Object.keys(v as object).sort()) {
        const item = (v as Record<string, unknown>)[k];
        if (item !== undefined) out[k] = normalize(item);
      }
      return out;
    }
    throw new TypeError(`cannot hash a ${typeof v}`);
  };
  return JSON.stringify(normalize(value));
}

/** The hash of a record: sha256 over its canonical JSON without the `hash` field. */
export function recordHash(record: Omit<ArchivedForceRecord, 'hash'> | ArchivedForceRecord): string {
  const { hash: _ignored, ...rest } = record as ArchivedForceRecord;
  return createHash('sha256').update(canonicalJson(rest)).digest('hex');
}

export interface ChainHead {
  seq: number;
  hash: string;
}

export const EMPTY_HEAD: ChainHead = { seq: 0, hash: GENESIS_HASH };

/** The next link of a cluster's chain for an etcd force record. */
export function chainRecord(head: ChainHead, cluster: string, kv: { key: string; value: string; createRevision: string }): ArchivedForceRecord {
  const body: Omit<ArchivedForceRecord, 'hash'> = {
    v: ARCHIVE_FORMAT_VERSION,
    cluster,
    seq: head.seq + 1,
    createRevision: kv.createRevision,
    key: kv.key,
    value: kv.value,
    record: decodeValue(ForceRecordSchema, kv.value) ?? null,
    prevHash: head.hash,
  };
  return { ...body, hash: recordHash(body) };
}

/** The archive object name: ordered by create revision (zero-padded), so a listing is in commit order. */
export function archiveObjectName(prefix: string, cluster: string, createRevision: string, key: string): string {
  const id = key.split('/').pop() || 'record';
  return `${prefix}${cluster}/${createRevision.padStart(20, '0')}-${id.replace(/[^A-Za-z0-9._-]/g, '_')}.json`;
}

export type ChainProblemKind = 'missing' | 'altered' | 'unreadable' | 'broken-link' | 'duplicate' | 'not-archived' | 'hidden' | 'unproven' | 'not-in-audit-log';

export interface ChainProblem {
  kind: ChainProblemKind;
  cluster: string;
  /** The object concerned, when there is one. */
  object?: string;
  seq?: number;
  detail: string;
}

export interface ChainEntry {
  object: string;
  /** The parsed object, or undefined when it is not a record at all. */
  record?: ArchivedForceRecord;
  /** Why it could not be parsed. */
  error?: string;
}

function isRecordShape(x: unknown): x is ArchivedForceRecord {
  const r = x as Partial<ArchivedForceRecord>;
  return (
    typeof r === 'object' &&
    r !== null &&
    r.v === ARCHIVE_FORMAT_VERSION &&
    typeof r.cluster === 'string' &&
    Number.isInteger(r.seq) &&
    typeof r.createRevision === 'string' &&
    typeof r.key === 'string' &&
    typeof r.value === 'string' &&
    typeof r.prevHash === 'string' &&
    typeof r.hash === 'string'
  );
}

/** Parses an archived object's bytes; an error string when it is not a record. */
export function parseArchived(text: string): ArchivedForceRecord | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  return isRecordShape(parsed) ? parsed : 'not an archived force record';
}

/**
 * Walks one cluster's chain and names every problem: records missing from the
 * sequence, records whose content no longer matches their hash, successors
 * whose prevHash names a different record, objects that cannot be read.
 */
export function verifyChain(cluster: string, entries: readonly ChainEntry[], objectName: (r: ArchivedForceRecord) => string): ChainProblem[] {
  const problems: ChainProblem[] = [];
  const bySeq = new Map<number, { object: string; record: ArchivedForceRecord; intact: boolean }>();
  for (const e of entries) {
    if (!e.record) {
      problems.push({ kind: 'unreadable', cluster, object: e.object, detail: `${e.object}: ${e.error ?? 'unreadable'}` });
      continue;
    }
    const r = e.record;
    let intact = true;
    if (recordHash(r) !== r.hash) {
      intact = false;
      problems.push({
        kind: 'altered',
        cluster,
        object: e.object,
        seq: r.seq,
        detail: `${e.object}: content does not match its hash (seq ${r.seq}, revision ${r.createRevision})`,
      });
    } else if (r.cluster !== cluster || objectName(r) !== e.object) {
      intact = false;
      problems.push({
        kind: 'altered',
        cluster,
        object: e.object,
        seq: r.seq,
        detail: `${e.object}: names cluster ${r.cluster} revision ${r.createRevision}, which belongs at ${objectName(r)}`,
      });
    } else {
      const decoded = chainRecord({ seq: r.seq - 1, hash: r.prevHash }, r.cluster, r);
      if (canonicalJson(decoded.record) !== canonicalJson(r.record)) {
        intact = false;
        problems.push({ kind: 'altered', cluster, object: e.object, seq: r.seq, detail: `${e.object}: the decoded record differs from the committed value` });
      }
    }
    const other = bySeq.get(r.seq);
    if (other) {
      problems.push({ kind: 'duplicate', cluster, object: e.object, seq: r.seq, detail: `${e.object} and ${other.object} both claim seq ${r.seq}` });
      continue;
    }
    bySeq.set(r.seq, { object: e.object, record: r, intact });
  }
  const seqs = [...bySeq.keys()].sort((a, b) => a - b);
  const last = seqs[seqs.length - 1] ?? 0;
  let previous: { object: string; record: ArchivedForceRecord; intact: boolean } | undefined;
  for (let seq = 1; seq <= last; seq++) {
    const current = bySeq.get(seq);
    if (!current) {
      let end = seq;
      while (end + 1 <= last && !bySeq.has(end + 1)) end++;
      const before = previous ? `after revision ${previous.record.createRevision}` : 'at the start of the chain';
      const next = bySeq.get(end + 1);
      problems.push({
        kind: 'missing',
        cluster,
        seq,
        detail: `${end === seq ? `record seq ${seq} is` : `records seq ${seq}–${end} are`} missing (${before}${next ? `, before revision ${next.record.createRevision}` : ''})`,
      });
      seq = end;
      previous = undefined;
      continue;
    }
    // A link is checked only between neighbours both present: a gap is reported once, above.
    if (previous && current.record.prevHash !== previous.record.hash) {
      problems.push({
        kind: previous.intact ? 'broken-link' : 'altered',
        cluster,
        object: previous.object,
        seq: previous.record.seq,
        detail: `${current.object} names a previous hash that ${previous.object} does not have: seq ${previous.record.seq} was altered or replaced`,
      });
    }
    if (!previous && seq === 1 && current.record.prevHash !== GENESIS_HASH) {
      problems.push({
        kind: 'broken-link',
        cluster,
        object: current.object,
        seq,
        detail: `${current.object}: the first record does not start from the genesis hash`,
      });
    }
    previous = current;
  }
  return problems;
}
