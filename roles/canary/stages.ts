// The canary's stages after the lock engine, read from what each one leaves
// behind, never from what a role says of itself, for exactly the grants this
// process's loop made (loop.ts CanaryGrant): another replica's grants, a row
// placed in the store at another revision, or a grant made before this
// process started are no progress of this canary. `stored` — the store holds
// the grant as the lock API's (the tailer checked its proof) and released;
// `sealed` — it was granted before the end of the newest period a signed
// digest covers (read from the archive bucket, checked against the
// deployment's public key: a digest placed by hand does not count); a sink
// stage — the sink saved a delivered position at or past the grant's
// revision. Each stage's time is the loop's time of the newest grant that
// reached it.
import type { Client } from 'minio';
import type { AuditStore } from '../../core/clickhouse.js';
import type { DigestKeyring } from '../../core/digestKey.js';
import { CANARY_HOLDER, CANARY_NAMESPACE } from '../../core/keyspace.js';
import { loadSql } from '../../platform/sql.js';
import { grantFilterParams } from '../../grants/filter.js';
import { DIGEST_OBJECT_PREFIX, digestProblem, parseDigest } from '../../exporters/digests/format.js';
import { readObjectText } from '../../exporters/storage/objectStore.js';
import type { CanaryGrant } from './loop.js';

const GRANT_SQL = loadSql('roles/canary/canaryGrant.sql');
// The sink's own reading of its position (the one definition, beside the sink).
const POSITION_SQL = loadSql('exporters/alerts/position.sql');
/** A digest is a few kilobytes; an object under a digest's name much larger than this was not written by the worker. */
const DIGEST_MAX_BYTES = 1 << 20;
/** Objects under the digests' names that did not hold, remembered so that each is read once (bounded). */
const BAD_OBJECTS_KEPT = 1_000;
/** At most this many objects are downloaded per read: junk placed under later names costs a bounded amount each time. */
const DOWNLOADS_PER_READ = 20;

export interface StageTimes {
  /** The loop's time of the newest of its grants the store holds (ms), or null. */
  stored: number | null;
  /** Of those, the newest a signed digest's period covers (ms), or null; `sealedThrough`: that period's end. */
  sealed: number | null;
  sealedThrough: number | null;
  /** Per alert sink that subscribes to the canary: the newest of its grants the sink delivered (ms), or null. */
  sinks: Record<string, number | null>;
  /** What could not be read this time, by stage (`sealed`, `sink:<name>`; `*`: every stage after the lock); its time stays as it was. */
  unread: Record<string, string>;
}

export interface DigestSource {
  s3: Client;
  bucket: string;
  /** The deployment's keys (a rotation adds one). */
  keyring: DigestKeyring;
  prefix?: string;
}

export interface CanaryFollowerOptions {
  store: AuditStore;
  cluster: string;
  /** Where the digests are and the key they are signed with; undefined (or returning it): none to follow yet. */
  digests?: () => DigestSource | undefined;
  /** The alert sinks whose rules name the `canary` kind: each is a stage (its delivered position, alert_checkpoints). */
  sinks?: readonly string[];
}

export class CanaryFollower {
  /** The newest digest object found valid so far: the next listing starts after it (the chain only grows). */
  #lastObject = '';
  #sealedThrough: number | null = null;
  readonly #badObjects = new Set<string>();

  constructor(private readonly o: CanaryFollowerOptions) {}

  /** How far `grants` (the loop's, oldest first) got; `previous`: the times to keep for what cannot be read now. */
  async read(grants: readonly CanaryGrant[], previous?: StageTimes): Promise<StageTimes> {
    const unread: Record<string, string> = {};
    const found = await this.#stored(grants);
    const newest = (pass: (g: CanaryGrant & { grantedMs: number }) => boolean): number | null => {
      let at: number | null = null;
      for (const g of grants) {
        const stored = found.get(`${g.key}\u0000${g.revision}`);
        if (stored !== undefined && pass({ ...g, grantedMs: stored }) && (at === null || g.at > at)) at = g.at;
      }
      return at;
    };
    let sealedThrough = this.#sealedThrough;
    try {
      sealedThrough = await this.#sealed();
    } catch (err) {
      unread.sealed = `the archive bucket: ${(err as Error).message}`;
    }
    const sinks: Record<string, number | null> = {};
    for (const sink of this.o.sinks ?? []) {
      try {
        // A sink saves its position only once what precedes it was delivered (webhookDelivery.ts).
        const [p] = await this.o.store.rows<{ revision: string; found: number }>(POSITION_SQL.text, { sink, cluster: this.o.cluster });
        const through = p && Number(p.found) === 1 ? BigInt(p.revision) : -1n;
        sinks[sink] = newest((g) => BigInt(g.revision) <= through);
      } catch (err) {
        unread[`sink:${sink}`] = `its position: ${(err as Error).message}`;
        sinks[sink] = previous?.sinks[sink] ?? null;
      }
    }
    return {
      stored: newest(() => true),
      sealed: sealedThrough === null ? null : newest((g) => g.grantedMs < sealedThrough),
      sealedThrough,
      sinks,
      unread,
    };
  }

  /** The loop's grants the store holds as the lock API's, released: their granted_at by key and revision. */
  async #stored(grants: readonly CanaryGrant[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (grants.length === 0) return out;
    const first = grants[0] as CanaryGrant;
    const filters = { cluster: this.o.cluster, keyPrefix: `${CANARY_NAMESPACE}/`, holder: CANARY_HOLDER, origin: 'api', endKind: 'release' } as const;
    // Granted from a minute before the first remembered grant (the store's time is etcd's writer's, not ours).
    const window = { fromMs: first.at - 60_000, toMs: Date.now() + 60_000, rule: 'granted' } as const;
    const rows = await this.o.store.rows<{ key: string; revision: string; ms: string }>(GRANT_SQL.text, {
      ...grantFilterParams(filters, window, null, 'keyPrefix', 'include'),
      keys: [...new Set(grants.map((g) => g.key))],
      // Numbers as bigint: an array of decimal strings would bind quoted.
      revisions: grants.map((g) => BigInt(g.revision)),
    });
    for (const r of rows) out.set(`${r.key}\u0000${r.revision}`, Number(r.ms));
    return out;
  }

  /** The end of the newest period a digest signed under the deployment's key covers (ms), or null. */
  async #sealed(): Promise<number | null> {
    const d = this.o.digests?.();
    if (!d) return this.#sealedThrough;
    const prefix = `${d.prefix ?? DIGEST_OBJECT_PREFIX}${this.o.cluster}/`;
    const digestName = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\d{12}\\.json$`);
    const names: string[] = [];
    for await (const item of d.s3.listObjectsV2(d.bucket, prefix, true, this.#lastObject || undefined)) {
      // Only what the worker writes: a digest's name and size. Anything else under the prefix is never downloaded.
      if (item.name && digestName.test(item.name) && (item.size ?? 0) <= DIGEST_MAX_BYTES && !this.#badObjects.has(item.name)) names.push(item.name);
    }
    names.sort();
    // Newest first: the first that holds is the head; older ones were read before (or are older still).
    for (const object of names.reverse().slice(0, DOWNLOADS_PER_READ)) {
      // A read that fails is the bucket's (said as unread, tried again next time); what was read and is no digest is junk.
      const text = await readObjectText(d.s3, d.bucket, object);
      let end: number | undefined;
      try {
        const parsed = parseDigest(text);
        if (typeof parsed !== 'string' && digestProblem(parsed, d.keyring, object, d.prefix ?? DIGEST_OBJECT_PREFIX) === undefined)
          end = Date.parse(parsed.periodEnd);
      } catch {
        // Unreadable as a digest (however it fails): not one.
      }
      if (end === undefined) {
        if (this.#badObjects.size < BAD_OBJECTS_KEPT) this.#badObjects.add(object);
        continue;
      }
      if (this.#sealedThrough === null || end > this.#sealedThrough) this.#sealedThrough = end;
      // Only a digest that holds moves the listing on: one placed by hand under a later name is skipped from then on,
      // never a reason to stop looking at the names before it.
      this.#lastObject = object;
      break;
    }
    return this.#sealedThrough;
  }
}
