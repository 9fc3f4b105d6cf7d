// The fail-open spool (DESIGN.md §2 "Quorum loss"): grants issued without
// quorum, one JSON line each in <dataDir>/spool/<cluster>.jsonl, appended and
// fsync'd by the lock API before the grant is answered, shipped by the tailer
// as `unprotected` grants. Writer and shipper share this format.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Type, { type Static } from 'typebox';
import { decodeValue } from './keyspace.js';

export const SpoolRecordSchema = Type.Object({
  v: Type.Literal(1),
  kind: Type.Literal('grant'),
  /** Unique per grant: the shipper's idempotency key. */
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
export type SpoolRecord = Static<typeof SpoolRecordSchema>;

export const spoolDir = (dataDir: string): string => path.join(dataDir, 'spool');
export const spoolPath = (dataDir: string, cluster: string): string => path.join(spoolDir(dataDir), `${cluster}.jsonl`);

export interface SpoolContents {
  records: SpoolRecord[];
  /** Lines that do not decode: a torn last line from a crash mid-append, or damage. Never fatal. */
  badLines: number[];
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
    const record = decodeValue(SpoolRecordSchema, line);
    if (record) records.push(record);
    else badLines.push(i + 1);
  });
  return { records, badLines };
}
