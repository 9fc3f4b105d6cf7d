// The canary's stages after the lock engine, read from what each one leaves
// behind, never from what a role says of itself: `stored` — the newest canary
// grant the store holds as the lock API's own (the tailer checked its proof)
// and released; `sealed` — the newest of those granted before the end of the
// newest period a signed digest covers (the digest read from the archive
// bucket and checked against the deployment's public key, so a digest placed
// by hand does not count). Each is the canary grant's time: its age is how
// far behind that stage is.
import type { KeyObject } from 'node:crypto';
import type { Client } from 'minio';
import type { AuditStore } from '../../core/clickhouse.js';
import { CANARY_NAMESPACE } from '../../core/keyspace.js';
import { loadSql } from '../../platform/sql.js';
import { grantFilterParams } from '../../grants/filter.js';
import { DIGEST_OBJECT_PREFIX, digestProblem, parseDigest } from '../../exporters/digests/format.js';
import { readObjectText } from '../../exporters/storage/objectStore.js';
import { CANARY_IDENTITY } from './loop.js';

const GRANT_SQL = loadSql('roles/canary/canaryGrant.sql');
// The sink's own reading of its position (the one definition, beside the sink).
const POSITION_SQL = loadSql('exporters/alerts/position.sql');
const MAX_REVISION = '18446744073709551615';

export interface StageTimes {
  /** The newest canary grant in the store (ms), or null. */
  stored: number | null;
  /** The newest canary grant a signed digest's period covers (ms), or null; `sealedThrough`: that period's end. */
  sealed: number | null;
  sealedThrough: number | null;
  /** Per alert sink that subscribes to the canary: the newest canary grant at or before its delivered position (ms), or null. */
  sinks: Record<string, number | null>;
}

export interface DigestSource {
  s3: Client;
  bucket: string;
  publicKey: KeyObject;
  keyId: string;
  prefix?: string;
}

export interface CanaryFollowerOptions {
  store: AuditStore;
  cluster: string;
  /** How far back a canary grant counts (the largest stage bound and then some): each read scans no more. */
  lookbackMs: number;
  /** Where the digests are and the key they are signed with; undefined (or returning it): none to follow yet. */
  digests?: () => DigestSource | undefined;
  keyPrefix?: string;
  /** The alert sinks whose rules name the `canary` kind: each is a stage (its delivered position, alert_checkpoints). */
  sinks?: readonly string[];
}

export class CanaryFollower {
  /** The newest digest object found valid so far: the next listing starts after it (the chain only grows). */
  #lastObject = '';
  #sealedThrough: number | null = null;

  constructor(private readonly o: CanaryFollowerOptions) {}

  async read(now = Date.now()): Promise<StageTimes> {
    const since = now - this.o.lookbackMs;
    const stored = await this.#newest(since, now + 1);
    const sealedThrough = await this.#sealed();
    const sealed = sealedThrough === null || stored === null ? null : stored < sealedThrough ? stored : await this.#newest(since, sealedThrough);
    const sinks: Record<string, number | null> = {};
    for (const sink of this.o.sinks ?? []) {
      // A sink saves its position only once what precedes it was delivered (webhookDelivery.ts).
      const [p] = await this.o.store.rows<{ revision: string; found: number }>(POSITION_SQL.text, { sink, cluster: this.o.cluster });
      sinks[sink] = p && Number(p.found) === 1 && stored !== null ? await this.#newest(since, now + 1, p.revision) : null;
    }
    return { stored, sealed, sealedThrough, sinks };
  }

  async #newest(sinceMs: number, beforeMs: number, throughRevision = MAX_REVISION): Promise<number | null> {
    const filters = {
      cluster: this.o.cluster,
      keyPrefix: this.o.keyPrefix ?? `${CANARY_NAMESPACE}/`,
      holder: CANARY_IDENTITY,
      origin: 'api',
      endKind: 'release',
    } as const;
    const params = grantFilterParams(filters, { fromMs: sinceMs, toMs: beforeMs, rule: 'granted' }, null, 'keyPrefix', 'include');
    const [r] = await this.o.store.rows<{ ms: string; n: string }>(GRANT_SQL.text, { ...params, throughRevision });
    return r && r.n !== '0' ? Number(r.ms) : null;
  }

  /** The end of the newest period a digest signed under the deployment's key covers (ms), or null. */
  async #sealed(): Promise<number | null> {
    const d = this.o.digests?.();
    if (!d) return this.#sealedThrough;
    const prefix = `${d.prefix ?? DIGEST_OBJECT_PREFIX}${this.o.cluster}/`;
    const names: string[] = [];
    for await (const item of d.s3.listObjectsV2(d.bucket, prefix, true, this.#lastObject || undefined)) if (item.name) names.push(item.name);
    names.sort();
    // Newest first: the first that holds is the head; older ones were read before (or are older still).
    for (const object of names.reverse()) {
      const parsed = parseDigest(await readObjectText(d.s3, d.bucket, object));
      if (typeof parsed === 'string' || digestProblem(parsed, d.publicKey, d.keyId, object, d.prefix ?? DIGEST_OBJECT_PREFIX) !== undefined) continue;
      const end = Date.parse(parsed.periodEnd);
      if (this.#sealedThrough === null || end > this.#sealedThrough) this.#sealedThrough = end;
      // Only a digest that holds moves the listing on: one placed by hand under a later name is read again (and
      // skipped) each time, never a reason to stop looking at the names before it.
      this.#lastObject = object;
      break;
    }
    return this.#sealedThrough;
  }
}
