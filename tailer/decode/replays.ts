// The replay check (docs/architecture.md, the insider model): a hold's proof
// (core/proof.ts) binds its key, every field and — checked by the
// decoder — the etcd lease it rides on (kv.lease = session). What it cannot
// name is its own revision: the API signs before etcd assigns one. So a real
// grant's value put back by hand after its release, on the same key and the
// same live lease, carries a valid proof. One grant is therefore bound here:
// a signed value is the grant whose revision first captured it; the same
// signed fields on the same key at any later grant revision are a copy, and
// read `foreign` (alarmed) — on its grant row, its events, and its end.
//
// Why this and not the alternatives the acquire txn offers (lock/acquire.ts):
// - the grant-guard write: /lockaudit/grant-guard lies outside the watched
//   prefixes, carries no proof, and an insider can put it in the same txn as
//   the copy; binding the proof to its previous revision would need a
//   compare on it, which serializes every acquire of the cluster.
// - a per-grant nonce: it would have to be stored to be checked later; the
//   signed fields already are (the grants row: holder, session, class, epoch,
//   wait_ms, granted_at ms), old values included. Two genuine grants of one
//   key with all of them equal would need a grant, a release and a grant of
//   the same session within one millisecond — three fsynced etcd txns.
// State lives in the store (survives restarts, is the same for every
// replica), read once per sink flush through the grants table's primary key
// (cluster, key): no etcd round trip, nothing on the acquire path.
// Limit: catch-up windows run concurrently, so a copy and its original
// captured in the same catch-up run can reach the sink in either order; the
// copy is then alarmed (and logged) when the original arrives, but its rows
// and events keep `api` to its end: its put event is already stored (and
// hashed into the digests) as `api`, and a grant row that disagreed with it
// would fail every export's grants check of that range.
import type { AuditStore } from '../../core/clickhouse.js';
import { PREFIX } from '../../core/keyspace.js';
import { loadSql } from '../../platform/sql.js';
import type { GrantRow, RowBatch } from '../types.js';

const REPLAYED = loadSql('tailer/sql/replayedGrants.sql');

/** The fields the hold's MAC covers, besides the key it is on. */
const signed = (g: Pick<GrantRow, 'key' | 'holder' | 'session' | 'class' | 'epoch' | 'wait_ms' | 'granted_at'>): string =>
  JSON.stringify([g.key, g.holder, g.session, g.class, Number(g.epoch), Number(g.wait_ms), Number(g.granted_at)]);

interface StoredFirst {
  key: string;
  holder: string;
  session: string;
  class: string;
  epoch: number | string;
  wait_ms: number | string;
  granted_at_ms: number | string;
  first_revision: string;
  /** Grant revisions of this signed value stored with an `api` row. */
  api_revisions: string[];
}

export interface Replay {
  key: string;
  grantRevision: string;
  firstRevision: string;
  /** true: the copy was written earlier as `api` (it reached the store before its original); only alarmed. */
  recordedAsApi: boolean;
}

export class ReplayCheck {
  readonly #store: AuditStore;
  readonly #cluster: string;
  readonly #onReplay: (replay: Replay) => void;

  constructor(store: AuditStore, cluster: string, onReplay: (replay: Replay) => void = () => undefined) {
    this.#store = store;
    this.#cluster = cluster;
    this.#onReplay = onReplay;
  }

  /** Marks the copies in a batch about to be written `foreign` (grant rows and the hold's events), in place. */
  async mark(batch: RowBatch): Promise<Replay[]> {
    const candidates = batch.grants.filter((g) => g.origin === 'api' && g.spool_id === '');
    if (candidates.length === 0) return [];
    // The first grant revision of each signed value: in this batch, and in what was captured before.
    const first = new Map<string, bigint>();
    const lower = (k: string, rev: bigint): void => {
      const had = first.get(k);
      if (had === undefined || rev < had) first.set(k, rev);
    };
    for (const g of candidates) lower(signed(g), BigInt(g.grant_revision));
    const keys = [...new Set(candidates.map((g) => g.key))];
    const ats = [...new Set(candidates.map((g) => Number(g.granted_at)))];
    const stored = await this.#store.rows<StoredFirst>(REPLAYED.text, { cluster: this.#cluster, keys, ats });
    const inBatch = new Map(first);
    // A copy stored as `api` before its original (the limit above): its later rows stay `api`.
    const storedAsApi = new Set<string>();
    const replays: Replay[] = [];
    for (const r of stored) {
      const k = signed({
        key: r.key,
        holder: r.holder,
        session: r.session,
        class: r.class,
        epoch: Number(r.epoch),
        wait_ms: Number(r.wait_ms),
        granted_at: Number(r.granted_at_ms),
      });
      const mine = inBatch.get(k);
      // Stored first at a higher revision than a grant of this batch: that stored grant was a copy that came first.
      if (mine !== undefined && BigInt(r.first_revision) > mine)
        replays.push({ key: r.key, grantRevision: r.first_revision, firstRevision: mine.toString(10), recordedAsApi: true });
      lower(k, BigInt(r.first_revision));
      for (const rev of r.api_revisions) storedAsApi.add(`${r.key}@${rev}`);
    }
    const copied = new Set<string>();
    for (const g of candidates) {
      const firstRevision = first.get(signed(g)) as bigint;
      if (firstRevision >= BigInt(g.grant_revision)) continue;
      const id = `${g.key}@${g.grant_revision}`;
      if (storedAsApi.has(id)) continue;
      g.origin = 'foreign';
      if (copied.has(id)) continue;
      copied.add(id);
      replays.push({ key: g.key, grantRevision: g.grant_revision, firstRevision: firstRevision.toString(10), recordedAsApi: false });
    }
    if (replays.length === 0) return [];
    for (const e of batch.events) {
      if (e.key.startsWith(PREFIX.hold) && copied.has(`${e.key.slice(PREFIX.hold.length)}@${e.grant_revision}`)) e.origin = 'foreign';
    }
    for (const r of replays) this.#onReplay(r);
    return replays;
  }
}
