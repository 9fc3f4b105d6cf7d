// The fail-open spool (docs/architecture.md, the lock service's rules): what the lock API did
// without quorum, one JSON line each in <dataDir>/spool/<cluster>.jsonl,
// appended and fsync'd by the lock API before it answers, shipped by the
// tailer as `unprotected` grants. Two kinds of record, both v1:
//   grant  a hold granted from memory with token 0;
//   end    how such a hold ended (released, or lapsed at the class TTL).
// Writer (lock/failOpen.ts), shipper (tailer/sink/spoolShipper.ts) and
// `lockaudit spool` (cli/spool.ts) share this format. Grant records are
// unchanged since the first version, so older spool files still read.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Type, { type Static } from 'typebox';
import { Value } from 'typebox/value';
import { decodeValue } from './keyspace.js';

export const SpoolGrantRecordSchema = Type.Object({
  v: Type.Literal(1),
  kind: Type.Literal('grant'),
  /** Unique per grant: the shipper's idempotency key (the grant row's spool_id). */
  id: Type.String({ minLength: 1 }),
  cluster: Type.String({ minLength: 1 }),
  /** The lock name, `<namespace>/<path>`. */
  key: Type.String({ minLength: 1 }),
  namespace: Type.String({ minLength: 1 }),
  class: Type.String({ minLength: 1 }),
  holder: Type.String({ minLength: 1 }),
  session: Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' }),
  /** Always "0": an unprotected grant carries no fencing token. */
  token: Type.Literal('0'),
  waitMs: Type.Integer({ minimum: 0 }),
  /** Grant wall time, ms since the Unix epoch. */
  at: Type.Integer({ minimum: 0 }),
  /** The epoch last seen before quorum was lost (for the reconciliation view). */
  epoch: Type.Integer({ minimum: 0 }),
});
export type SpoolGrantRecord = Static<typeof SpoolGrantRecordSchema>;

/** How an unprotected hold ended: released by its holder, or lapsed at the class TTL. */
export const SpoolEndHowSchema = Type.Union([Type.Literal('release'), Type.Literal('expiry')]);
export type SpoolEndHow = Static<typeof SpoolEndHowSchema>;

export const SpoolEndRecordSchema = Type.Object({
  v: Type.Literal(1),
  kind: Type.Literal('end'),
  /** Unique per end record: the shipper's idempotency key for the end's event row. */
  id: Type.String({ minLength: 1 }),
  /** The `id` of the grant record this ends (the closed grant row's spool_id). */
  grantId: Type.String({ minLength: 1 }),
  cluster: Type.String({ minLength: 1 }),
  /** The lock name, as in the grant record. */
  key: Type.String({ minLength: 1 }),
  how: SpoolEndHowSchema,
  /** When the hold ended, ms since the Unix epoch: the release's wall time, or the grant's at + TTL for an expiry. */
  at: Type.Integer({ minimum: 0 }),
  /**
   * The grant record it ends, verbatim. Redundant with the grant's own line
   * on purpose: the shipper builds the complete closed grant row from this
   * line alone, whether the grant line is in the same batch, was shipped
   * long ago, or sits in a spool file since rotated away.
   */
  grant: SpoolGrantRecordSchema,
});
export type SpoolEndRecord = Static<typeof SpoolEndRecordSchema>;

export const SpoolRecordSchema = Type.Union([SpoolGrantRecordSchema, SpoolEndRecordSchema]);
export type SpoolRecord = Static<typeof SpoolRecordSchema>;

/**
 * Checks an already parsed end record, including what the schema cannot say:
 * its grant is the one it names, on the same key, and it does not end before
 * it began. Returns the record, or the first reason it does not fit.
 */
export function checkSpoolEnd(raw: unknown): SpoolEndRecord | string {
  if (!Value.Check(SpoolEndRecordSchema, raw)) {
    const [first] = Value.Errors(SpoolEndRecordSchema, raw);
    return first ? `end record ${first.instancePath || '/'}: ${first.message}` : 'not an end record';
  }
  const end = raw as SpoolEndRecord;
  if (end.grant.id !== end.grantId) return 'end record: grant.id differs from grantId';
  if (end.grant.key !== end.key) return 'end record: grant.key differs from key';
  if (end.at < end.grant.at) return 'end record: ends before its grant';
  return end;
}

export const spoolDir = (dataDir: string): string => path.join(dataDir, 'spool');
export const spoolPath = (dataDir: string, cluster: string): string => path.join(spoolDir(dataDir), `${cluster}.jsonl`);

export interface SpoolContents {
  records: SpoolRecord[];
  /** Lines that do not decode: a torn last line from a crash mid-append, or damage. Never fatal. */
  badLines: number[];
}

/** Decodes one spool line; undefined when it is not a v1 grant or end record. */
export function decodeSpoolRecord(line: string): SpoolRecord | undefined {
  const record = decodeValue(SpoolRecordSchema, line);
  if (record?.kind === 'end' && typeof checkSpoolEnd(record) === 'string') return undefined;
  return record;
}

/** Reads a spool file; a missing file is an empty spool. */
export function readSpool(file: string): SpoolContents {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], badLines: [] };
    throw err;
  }
  const records: SpoolRecord[] = [];
  const badLines: number[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const record = decodeSpoolRecord(line);
    if (record) records.push(record);
    else badLines.push(i + 1);
  });
  return { records, badLines };
}

/** One grant of a spool with the record that ended it, if any. */
export interface SpoolHold {
  grant: SpoolGrantRecord;
  end: SpoolEndRecord | undefined;
}

/**
 * Pairs each grant with its end, in spool order. An end whose grant is not in
 * these records (the spool was rotated in between) comes back in `orphanEnds`;
 * it still carries its grant.
 */
export function pairSpool(records: readonly SpoolRecord[]): { holds: SpoolHold[]; orphanEnds: SpoolEndRecord[] } {
  const holds: SpoolHold[] = [];
  const byId = new Map<string, SpoolHold>();
  const orphanEnds: SpoolEndRecord[] = [];
  for (const r of records) {
    if (r.kind === 'grant') {
      const hold: SpoolHold = { grant: r, end: undefined };
      holds.push(hold);
      byId.set(r.id, hold);
      continue;
    }
    const hold = byId.get(r.grantId);
    if (hold && !hold.end) hold.end = r;
    else if (!hold) orphanEnds.push(r);
  }
  return { holds, orphanEnds };
}
