// Ships fail-open spools (what the lock API did without quorum) into the
// audit store as `unprotected` grants. Idempotent: a grant line becomes the
// event row (cluster, 0, '/spool/<id>') and the open grant row
// (cluster, <lock>, 0, <id>, row_version 0); an end line becomes the event row
// (cluster, 0, '/spool/<end id>') and the closed row of the grant it ends
// (cluster, <lock>, 0, <grant id>, row_version 1), so shipping a line twice
// changes nothing under FINAL and the closed row wins over the open one. A
// sidecar file remembers how far the spool was shipped (written after the
// rows are durable), only to avoid re-reading; it is not needed for
// correctness.
//
// Grant lines (JSON Lines, <dataDir>/spool/<cluster>.jsonl; unknown fields
// are ignored, so the writer can add more):
//   id         string  unique per grant (required, or `seq` below)
//   seq        number  alternative to `id`: a per-writer sequence; with
//                      optional `node` (string) the id is `<node>:<seq>`
//   key        string  the lock name `<namespace>/<path>` or its hold key `/l/...`
//   holder     string  identity of the holder
//   session    string|number  the local session id
//   class      string  the lock class
//   at | grantedAt  number (ms since epoch) or ISO-8601 string: grant time
//   waitMs     number  optional, default 0
//   epoch      number  optional, default 0
//   kind       string  optional: "grant" (the default) or "end"
// The lock API's writer (core/spool.ts, SpoolGrantRecordSchema v1: v, kind,
// id, cluster, key, namespace, class, holder, session, token "0", waitMs, at,
// epoch) fits this schema as it is.
// End lines (kind "end") must be core/spool.ts SpoolEndRecordSchema v1: id,
// grantId, cluster, key, how ("release" | "expiry"), at (ms), and `grant`, a
// copy of the grant record they end. The closed row is built from that copy
// with the same code as the open row, so it carries the grant's own columns
// without reading the grant line or the store back: arrival order, batch
// boundaries and rotated spool files do not matter.
// Grants in a spool carry token 0 (docs/architecture.md, the lock service's rules). A line that does not fit is
// quarantined (revision 0, key '/spool/<file>@<inode>:<byte offset>') with the reason.
// So is a line that contradicts what was shipped (ShippedIds below): an id
// names one record for good and a grant ends once — a `seq` that restarted, an
// end whose copy of its grant differs from the grant line, or a second end of
// an ended grant would otherwise replace what was shipped, silently.
// A last line without a newline is being written: it waits for the next pass.
import { keptColumns } from '../../core/valueBound.js';
import { closeSync, openSync, readSync, renameSync, statSync, writeFileSync, readFileSync, fsyncSync } from 'node:fs';
import path from 'node:path';
import type { AuditStore } from '../../core/clickhouse.js';
import type { AuditEventRow } from '../../core/events.js';
import { PREFIX, parseLockName } from '../../core/keyspace.js';
import type { Logger } from '../../core/logger.js';
import { checkSpoolEnd, type SpoolEndHow } from '../../core/spool.js';
import { loadSql } from '../../platform/sql.js';
import { writeRows } from './rowWriter.js';
import type { GrantRow, QuarantineRow } from '../types.js';

export interface SpoolLine {
  id: string;
  lock: string;
  namespace: string;
  path: string;
  holder: string;
  session: string;
  class: string;
  at: number;
  waitMs: number;
  epoch: number;
}

/** The end of an unprotected grant, with the grant it ends (parsed as a grant line). */
export interface SpoolEndLine {
  id: string;
  how: SpoolEndHow;
  at: number;
  grant: SpoolLine;
}

export type SpoolEntry = { kind: 'grant'; grant: SpoolLine } | { kind: 'end'; end: SpoolEndLine };

/**
 * row_version of the closed row of an unprotected grant: above the open
 * row's 0, and the same on every shipping (a grant has one end), so
 * re-shipping is idempotent.
 */
export const SPOOL_END_ROW_VERSION = '1';

const SHIPPED = loadSql('tailer/sql/spoolShipped.sql');

const spoolKey = (id: string): string => `/spool/${id}`;
const LOOKUP_IDS = 1_000;

/** A spool record as shipped: its event row's key, type, value and previous value (spoolRows / spoolEndRows). */
export interface StoredSpoolRecord {
  key: string;
  event_type: string;
  value: string;
  /** An end's: its copy of the grant line it ends. */
  prev_value: string;
}

/** What one spool id names: a grant (its columns) or an end (of which grant, how, when). */
type Named = { kind: 'grant'; grant: SpoolLine } | End;
type End = { kind: 'end'; id: string; grantId: string; how: string; at: number };

const GRANT_FIELDS = ['lock', 'holder', 'session', 'class', 'at', 'waitMs', 'epoch'] as const;

function objectOf(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function namedOf(r: StoredSpoolRecord): Named | undefined {
  const o = objectOf(r.value);
  if (!o) return undefined;
  if (r.event_type === 'unprotected-grant') return { kind: 'grant', grant: o as unknown as SpoolLine };
  return { kind: 'end', id: String(o.id), grantId: String(o.grantId), how: String(o.how), at: Number(o.at) };
}

/** The first field in which two descriptions of one grant differ (undefined: the same grant). */
function grantDiff(shipped: SpoolLine, line: SpoolLine): string | undefined {
  return GRANT_FIELDS.find((f) => shipped[f] !== undefined && shipped[f] !== line[f]);
}

/**
 * A spool id names one record for good: the shipper's rows are keyed by it
 * (the event '/spool/<id>', the grant (key, 0, id)), so a second, different
 * record under the same id — a writer whose `seq` restarted, an end record
 * carrying another copy of its grant — would silently replace what was
 * shipped, or leave the grant twice in the tables sorted by grant time or
 * holder. Each line is checked against what its ids named when first shipped
 * (the store, then earlier lines of the same pass); a line that contradicts
 * them is quarantined with the reason, and what was shipped stands.
 */
export class ShippedIds {
  readonly #named = new Map<string, Named>();
  /** Per grant id, the end shipped for it: a grant ends once. */
  readonly #endOf = new Map<string, End>();

  constructor(stored: readonly StoredSpoolRecord[]) {
    const ends: Array<{ r: StoredSpoolRecord; end: End }> = [];
    for (const r of stored) {
      const n = namedOf(r);
      if (!n || this.#named.has(r.key)) continue;
      this.#named.set(r.key, n);
      if (n.kind === 'end') ends.push({ r, end: n });
    }
    for (const { r, end } of ends) {
      if (!this.#endOf.has(end.grantId)) this.#endOf.set(end.grantId, end);
      // An end shipped before its grant line: its copy is what the grant's id names (a later grant line must match it).
      const copy = objectOf(r.prev_value);
      if (copy && !this.#named.has(spoolKey(end.grantId))) this.#named.set(spoolKey(end.grantId), { kind: 'grant', grant: copy as unknown as SpoolLine });
    }
  }

  /** Records the line, or says why it contradicts what its ids already name. */
  admit(line: SpoolEntry): string | undefined {
    if (line.kind === 'grant') {
      const g = line.grant;
      const before = this.#named.get(spoolKey(g.id));
      if (before?.kind === 'end') return `grant id "${g.id}" is already the id of an end record: a spool id names one record`;
      if (before?.kind === 'grant') {
        const diff = grantDiff(before.grant, g);
        if (diff) return `grant id "${g.id}" was shipped before as a different grant (${diff} differs): a spool id names one grant`;
        return undefined;
      }
      this.#named.set(spoolKey(g.id), { kind: 'grant', grant: g });
      return undefined;
    }
    const e = line.end;
    const own = this.#named.get(spoolKey(e.id));
    if (own?.kind === 'grant') return `end id "${e.id}" is already the id of a grant record: a spool id names one record`;
    if (own?.kind === 'end' && (own.grantId !== e.grant.id || own.how !== e.how || own.at !== e.at)) {
      return `end id "${e.id}" was shipped before as a different end: a spool id names one record`;
    }
    const grant = this.#named.get(spoolKey(e.grant.id));
    if (grant?.kind === 'end') return `end record's grantId "${e.grant.id}" is the id of an end record, not of a grant`;
    if (grant?.kind === 'grant') {
      const diff = grantDiff(grant.grant, e.grant);
      if (diff) return `end record's copy of grant "${e.grant.id}" differs from the grant as shipped (${diff} differs)`;
    }
    const ended = this.#endOf.get(e.grant.id);
    if (ended && ended.id !== e.id) {
      return `grant "${e.grant.id}" already ended (${ended.how} at ${new Date(ended.at).toISOString()}, end "${ended.id}"): a grant ends once`;
    }
    if (grant === undefined) {
      // No grant line shipped or earlier in this pass: the end's copy is what that id names from now on
      // (a later pass finds it again through the end's grantId and prev_value).
      this.#named.set(spoolKey(e.grant.id), { kind: 'grant', grant: e.grant });
    }
    const end: End = { kind: 'end', id: e.id, grantId: e.grant.id, how: e.how, at: e.at };
    this.#named.set(spoolKey(e.id), end);
    this.#endOf.set(e.grant.id, end);
    return undefined;
  }
}

export const spoolFile = (dataDir: string, cluster: string): string => path.join(dataDir, 'spool', `${cluster}.jsonl`);

/** Parses one spool line; a string is the reason it does not fit. */
export function parseSpoolLine(text: string): SpoolEntry | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'not a JSON object';
  const o = raw as Record<string, unknown>;
  if (o.kind === 'end') {
    const end = checkSpoolEnd(o);
    if (typeof end === 'string') return end;
    const grant = parseGrant(end.grant as unknown as Record<string, unknown>);
    if (typeof grant === 'string') return `end record's grant: ${grant}`;
    return { kind: 'end', end: { id: end.id, how: end.how, at: end.at, grant } };
  }
  if (o.kind !== undefined && o.kind !== 'grant') return `kind "${String(o.kind).slice(0, 40)}" is neither grant nor end`;
  const grant = parseGrant(o);
  return typeof grant === 'string' ? grant : { kind: 'grant', grant };
}

function parseGrant(o: Record<string, unknown>): SpoolLine | string {
  const str = (v: unknown): string | undefined =>
    typeof v === 'string' && v.length > 0 ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined;
  let id = str(o.id);
  if (!id && typeof o.seq === 'number') id = o.node !== undefined ? `${str(o.node) ?? ''}:${o.seq}` : String(o.seq);
  if (!id) return 'no id (or seq)';
  const keyText = str(o.key);
  if (!keyText) return 'no key';
  const lock = keyText.startsWith(PREFIX.hold) ? keyText.slice(PREFIX.hold.length) : keyText;
  const name = parseLockName(lock);
  if (!name) return `key "${keyText.slice(0, 80)}" is not a lock name`;
  const holder = str(o.holder);
  if (!holder) return 'no holder';
  const timeRaw = o.at ?? o.grantedAt;
  const at = typeof timeRaw === 'number' ? timeRaw : typeof timeRaw === 'string' ? Date.parse(timeRaw) : NaN;
  if (!Number.isFinite(at) || at < 0) return 'no valid at/grantedAt';
  const waitMs = typeof o.waitMs === 'number' && o.waitMs >= 0 ? Math.floor(o.waitMs) : 0;
  const epoch = typeof o.epoch === 'number' && o.epoch >= 0 ? Math.floor(o.epoch) : 0;
  return {
    id,
    lock,
    namespace: name.namespace,
    path: name.path,
    holder,
    session: str(o.session) ?? '',
    class: str(o.class) ?? '',
    at: Math.floor(at),
    waitMs,
    epoch,
  };
}

export function spoolRows(cluster: string, line: SpoolLine): { event: AuditEventRow; grant: GrantRow } {
  const event: AuditEventRow = {
    cluster,
    revision: '0',
    key: `/spool/${line.id}`,
    event_type: 'unprotected-grant',
    op: 'spool',
    namespace: line.namespace,
    lock_path: line.path,
    class: line.class,
    holder: line.holder,
    session: line.session,
    token: '0',
    epoch: line.epoch,
    grant_revision: '0',
    wait_ms: line.waitMs,
    wall_time: line.at,
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: '0',
    mod_revision: '0',
    version: '0',
    lease: '0',
    value: JSON.stringify(line),
    prev_value: '',
    unprotected: 1,
  };
  const grant: GrantRow = {
    cluster,
    key: line.lock,
    namespace: line.namespace,
    lock_path: line.path,
    class: line.class,
    holder: line.holder,
    session: line.session,
    token: '0',
    epoch: line.epoch,
    grant_revision: '0',
    spool_id: line.id,
    granted_at: line.at,
    wait_ms: line.waitMs,
    end_kind: '',
    end_revision: '0',
    ended_at: null,
    ended_at_error_ms: 0,
    duration_ms: null,
    unprotected: 1,
    start_known: 1,
    row_version: '0',
  };
  return { event, grant };
}

/** The rows of an end line: its event, and the closed row of its grant (the open row's columns, ended). */
export function spoolEndRows(cluster: string, end: SpoolEndLine): { event: AuditEventRow; grant: GrantRow } {
  const open = spoolRows(cluster, end.grant);
  const event: AuditEventRow = {
    ...open.event,
    key: `/spool/${end.id}`,
    event_type: end.how,
    wall_time: end.at,
    value: JSON.stringify({ id: end.id, grantId: end.grant.id, how: end.how, at: end.at }),
    // Like an etcd delete's previous value: the grant it ends.
    prev_value: open.event.value,
  };
  const grant: GrantRow = {
    ...open.grant,
    end_kind: end.how,
    end_revision: '0',
    ended_at: end.at,
    ended_at_error_ms: 0, // the writer knows the end exactly: the release's time, or at + TTL
    duration_ms: Math.max(0, end.at - open.grant.granted_at),
    row_version: SPOOL_END_ROW_VERSION,
  };
  return { event, grant };
}

interface ShippedMark {
  offset: number;
  ino: number;
}

export class SpoolShipper {
  readonly #store: AuditStore;
  readonly #cluster: string;
  readonly #file: string;
  readonly #log: Logger;
  readonly #onShipped: ((n: number) => void) | undefined;
  readonly #proofSecret: Buffer | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> = Promise.resolve();
  #stopping = new AbortController();

  /** `proofSecret`: the origin secret, whose proof a quarantined line carries (verify names an entry without one). */
  constructor(store: AuditStore, cluster: string, dataDir: string, log: Logger, onShipped?: (n: number) => void, proofSecret?: Buffer) {
    this.#proofSecret = proofSecret;
    this.#store = store;
    this.#cluster = cluster;
    this.#file = spoolFile(dataDir, cluster);
    this.#log = log;
    this.#onShipped = onShipped;
  }

  /** Ships every `intervalMs` until stop(). */
  start(intervalMs = 5_000): void {
    if (this.#timer) return;
    if (this.#stopping.signal.aborted) this.#stopping = new AbortController();
    const tick = (): void => {
      this.#running = this.shipOnce()
        .catch((err: Error) => this.#log.warn({ err: err.message }, 'spool shipping failed; will retry'))
        .finally(() => {
          if (this.#timer) this.#timer = setTimeout(tick, intervalMs);
        });
    };
    this.#timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Ships the lines not yet shipped; returns how many lines (grants and ends) were written. */
  async shipOnce(maxBytes = 8 * 1024 * 1024): Promise<number> {
    let st;
    try {
      st = statSync(this.#file);
    } catch {
      return 0; // no spool: nothing was granted without quorum
    }
    const mark = this.#readMark();
    // A new file (rotated or truncated) is shipped from the start; ids keep it idempotent.
    let offset = mark && mark.ino === st.ino && mark.offset <= st.size ? mark.offset : 0;
    let granted = 0;
    let ended = 0;
    while (offset < st.size) {
      const length = Math.min(maxBytes, st.size - offset);
      const buf = Buffer.alloc(length);
      const fd = openSync(this.#file, 'r');
      try {
        readSync(fd, buf, 0, length, offset);
      } finally {
        closeSync(fd);
      }
      const lastNewline = buf.lastIndexOf(0x0a);
      if (lastNewline < 0) break; // a partial line: wait for its end
      const events: AuditEventRow[] = [];
      const grants: GrantRow[] = [];
      const quarantine: QuarantineRow[] = [];
      const quarantineLine = (at: number, text: string, reason: string): void => {
        // The file's inode too: a rotated file starts at offset 0 again, and one key keeps only its newest row.
        quarantine.push({
          cluster: this.#cluster,
          revision: '0',
          key: `/spool/${path.basename(this.#file)}@${st.ino}:${at}`,
          op: 'spool',
          ...keptColumns('value', text),
          reason: `spool line: ${reason}`,
        });
      };
      const parsed: { at: number; text: string; line: SpoolEntry }[] = [];
      let lineStart = 0;
      while (lineStart <= lastNewline) {
        const nl = buf.indexOf(0x0a, lineStart);
        const text = buf.subarray(lineStart, nl).toString('utf8').trim();
        const at = offset + lineStart;
        lineStart = nl + 1;
        if (text.length === 0) continue;
        const line = parseSpoolLine(text);
        if (typeof line === 'string') quarantineLine(at, text, line);
        else parsed.push({ at, text, line });
      }
      const named = new ShippedIds(await this.#shipped(parsed.map((p) => p.line)));
      for (const { at, text, line } of parsed) {
        const conflict = named.admit(line);
        if (conflict !== undefined) {
          quarantineLine(at, text, conflict);
          continue;
        }
        const rows = line.kind === 'grant' ? spoolRows(this.#cluster, line.grant) : spoolEndRows(this.#cluster, line.end);
        events.push(rows.event);
        grants.push(rows.grant);
        if (line.kind === 'grant') granted += 1;
        else ended += 1;
      }
      // Bounded: the next tick ships from the same mark again.
      await writeRows(
        this.#store,
        { events, grants, quarantine },
        {
          retry: { initialMs: 100, maxMs: 2_000, maxAttempts: 5, signal: this.#stopping.signal },
          ...(this.#proofSecret ? { proofSecret: this.#proofSecret } : {}),
        },
      );
      if (quarantine.length > 0)
        this.#log.error({ lines: quarantine.length, file: this.#file }, 'spool lines that do not fit or contradict what was shipped; quarantined');
      offset += lastNewline + 1;
      this.#writeMark({ offset, ino: st.ino });
    }
    const shipped = granted + ended;
    if (shipped > 0) {
      this.#onShipped?.(shipped);
      this.#log.info({ grants: granted, ends: ended }, 'shipped unprotected grants and their ends from the fail-open spool');
    }
    return shipped;
  }

  /**
   * What was shipped that these lines touch: the records under their ids ('/spool/<id>': their own, an end's
   * grant) and the ends shipped for their grants. Asked LOOKUP_IDS ids at a time: a query's parameters travel
   * in the URL of a ClickHouse server, which takes 1 MiB, and a pass after a long fail-open spell has tens of
   * thousands of lines.
   */
  async #shipped(lines: readonly SpoolEntry[]): Promise<StoredSpoolRecord[]> {
    const grantIds = [...new Set(lines.map((l) => (l.kind === 'grant' ? l.grant.id : l.end.grant.id)))];
    const endIds = lines.flatMap((l) => (l.kind === 'end' ? [l.end.id] : []));
    const out: StoredSpoolRecord[] = [];
    for (let i = 0; i < grantIds.length; i += LOOKUP_IDS) {
      const batch = grantIds.slice(i, i + LOOKUP_IDS);
      out.push(...(await this.#store.rows<StoredSpoolRecord>(SHIPPED.text, { cluster: this.#cluster, keys: batch.map(spoolKey), grantIds: batch })));
    }
    for (let i = 0; i < endIds.length; i += LOOKUP_IDS) {
      out.push(
        ...(await this.#store.rows<StoredSpoolRecord>(SHIPPED.text, {
          cluster: this.#cluster,
          keys: endIds.slice(i, i + LOOKUP_IDS).map(spoolKey),
          grantIds: [],
        })),
      );
    }
    return out;
  }

  #readMark(): ShippedMark | undefined {
    try {
      const v = JSON.parse(readFileSync(`${this.#file}.shipped`, 'utf8')) as Partial<ShippedMark>;
      return typeof v.offset === 'number' && typeof v.ino === 'number' ? { offset: v.offset, ino: v.ino } : undefined;
    } catch {
      return undefined;
    }
  }

  /** Temp file, fsync, rename: the mark is never half-written. */
  #writeMark(mark: ShippedMark): void {
    const target = `${this.#file}.shipped`;
    const tmp = `${target}.tmp`;
    writeFileSync(tmp, JSON.stringify({ version: 1, ...mark }));
    const fd = openSync(tmp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, target);
  }
}
