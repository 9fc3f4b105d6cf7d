// Writes the lock keyspace exactly as the lock API does (core/keyspace.ts),
// so tailer tests need not wait for the lock API: grants by txn on a session
// lease, releases and session closes with a mark in the same txn,
// force-releases with a force record in the same txn, lease expiries
// (revoke, no marker), durable queue enter/leave, class puts, clock writes.
// Every write records the audit events it must produce: (revision, key, type).
// Markers and force records carry the API's proof (core/proof.ts) with the
// suite's origin secret, bound as the API binds them, so a tailer holding the
// secret takes them as the API's.
import { randomBytes } from 'node:crypto';
import type { Etcd3 } from 'etcd3';
import type { EventType } from '../../core/events.js';
import { forceMac, markMac } from '../../core/proof.js';
import { writeClock } from '../../tailer/clock/clockWriter.js';
import { PREFIX, classKey, forceKey, holdKey, markKey, queueKey, type ForceRecord, type MarkValue } from '../../core/keyspace.js';
import { originSecret } from '../../core/originSecret.js';
import { testConfig } from './env.js';

/** etcd's default --max-txn-ops: the suite's etcd runs with etcd's defaults, as users' do. */
export const ETCD_DEFAULT_MAX_TXN_OPS = 128;

export interface ExpectedEvent {
  revision: string;
  key: string;
  type: EventType;
}

export interface Session {
  id: string;
  holds: Map<string, string>; // lock → grant revision
}

export class Workload {
  readonly client: Etcd3;
  readonly ns: string;
  readonly expected: ExpectedEvent[] = [];
  #markLease: string | undefined;
  #seq = 0;

  readonly #secret: Buffer;

  constructor(client: Etcd3, ns: string, secret: Buffer = originSecret(testConfig())) {
    this.client = client;
    this.ns = ns;
    this.#secret = secret;
  }

  #mark(m: Omit<MarkValue, 'mac'>): string {
    return JSON.stringify({ ...m, mac: markMac(this.#secret, m) });
  }

  lock(path: string): string {
    return `${this.ns}/${path}`;
  }

  #id(): string {
    this.#seq += 1;
    return `${this.ns}-${this.#seq}-${randomBytes(3).toString('hex')}`;
  }

  #record(revision: string, key: string, type: EventType): void {
    this.expected.push({ revision, key, type });
  }

  async #lease(ttlSeconds: number): Promise<string> {
    const res = await this.client.leaseClient.leaseGrant({ TTL: ttlSeconds });
    return String(res.ID);
  }

  /** Markers live on a short shared lease (their own expiry deletes are 'marker' deletes). */
  async #marks(): Promise<string> {
    this.#markLease ??= await this.#lease(600);
    return this.#markLease;
  }

  async session(ttlSeconds = 600): Promise<Session> {
    return { id: await this.#lease(ttlSeconds), holds: new Map() };
  }

  /** Acquire: key absent → put the hold on the session lease. */
  async grant(s: Session, path: string, opts: { holder?: string; class?: string; waitMs?: number; epoch?: number } = {}): Promise<string> {
    const lock = this.lock(path);
    const key = holdKey(lock);
    const value = JSON.stringify({
      holder: opts.holder ?? `spiffe://test/${s.id}`,
      session: s.id,
      class: opts.class ?? 'payments',
      epoch: opts.epoch ?? 0,
      waitMs: opts.waitMs ?? 3,
      at: Date.now(),
    });
    const res = await this.client.if(key, 'Create', '==', 0).then(this.client.put(key).value(value).lease(s.id)).commit();
    if (!res.succeeded) throw new Error(`${lock} is held`);
    const rev = String(res.header.revision);
    s.holds.set(lock, rev);
    this.#record(rev, key, 'grant');
    return rev;
  }

  /** Many grants in one txn (fast setup for mass expiry): one revision, many keys — at most ETCD_DEFAULT_MAX_TXN_OPS. */
  async grantMany(s: Session, paths: readonly string[], opts: { class?: string } = {}): Promise<string> {
    const at = Date.now();
    const ops = paths.map((p) =>
      this.client
        .put(holdKey(this.lock(p)))
        .value(JSON.stringify({ holder: `spiffe://test/${s.id}`, session: s.id, class: opts.class ?? 'payments', epoch: 0, waitMs: 0, at }))
        .lease(s.id),
    );
    const res = await this.client
      .if(PREFIX.clock, 'Version', '>', -1)
      .then(...ops)
      .commit();
    const rev = String(res.header.revision);
    for (const p of paths) {
      s.holds.set(this.lock(p), rev);
      this.#record(rev, holdKey(this.lock(p)), 'grant');
    }
    return rev;
  }

  /** Release: delete the hold + put a 'release' mark, one txn. */
  async release(s: Session, path: string): Promise<string> {
    const lock = this.lock(path);
    const key = holdKey(lock);
    const mk = markKey(this.#id());
    const res = await this.client
      .if(key, 'Mod', '==', s.holds.get(lock) ?? '0')
      .then(
        this.client.delete().key(key),
        this.client
          .put(mk)
          .value(this.#mark({ kind: 'release', by: `spiffe://test/${s.id}`, at: Date.now(), key: lock, session: s.id, grant: s.holds.get(lock) ?? '0' }))
          .lease(await this.#marks()),
      )
      .commit();
    if (!res.succeeded) throw new Error(`release of ${lock} failed`);
    const rev = String(res.header.revision);
    s.holds.delete(lock);
    this.#record(rev, key, 'release');
    this.#record(rev, mk, 'marker');
    return rev;
  }

  /** Session close: delete every hold of the session + a 'session-close' mark in one txn, then revoke the lease. */
  async closeSession(s: Session): Promise<string> {
    const mk = markKey(this.#id());
    const keys = [...s.holds.keys()].map(holdKey);
    const res = await this.client
      .if(PREFIX.clock, 'Version', '>', -1)
      .then(
        ...keys.map((k) => this.client.delete().key(k)),
        this.client
          .put(mk)
          .value(this.#mark({ kind: 'session-close', by: 'test', at: Date.now(), session: s.id }))
          .lease(await this.#marks()),
      )
      .commit();
    const rev = String(res.header.revision);
    for (const k of keys) this.#record(rev, k, 'session-close');
    this.#record(rev, mk, 'marker');
    s.holds.clear();
    await this.client.leaseClient.leaseRevoke({ ID: s.id });
    return rev;
  }

  /** Force-release: delete the hold + put the force record, one txn. */
  async forceRelease(s: Session, path: string): Promise<string> {
    const lock = this.lock(path);
    const key = holdKey(lock);
    const id = this.#id();
    const grantRev = s.holds.get(lock) ?? '0';
    const fields: Omit<ForceRecord, 'mac'> = {
      id,
      key: lock,
      holder: `spiffe://test/${s.id}`,
      session: s.id,
      token: grantRev,
      class: 'payments',
      enforcement: 'fenced',
      requester: 'op-a',
      approver: 'op-b',
      reason: 'stuck',
      requestedAt: Date.now() - 10,
      approvedAt: Date.now(),
      revokedSession: false,
    };
    const record: ForceRecord = { ...fields, mac: forceMac(this.#secret, fields) };
    const res = await this.client
      .if(key, 'Mod', '==', grantRev)
      .then(
        this.client.delete().key(key),
        this.client
          .put(forceKey(id))
          .value(JSON.stringify(record))
          .lease(await this.#lease(86_400)),
      )
      .commit();
    if (!res.succeeded) throw new Error(`force-release of ${lock} failed`);
    const rev = String(res.header.revision);
    s.holds.delete(lock);
    this.#record(rev, key, 'force-release');
    this.#record(rev, forceKey(id), 'force-record');
    return rev;
  }

  /**
   * Lease expiry: etcd deletes every key of the lease at one revision, with no
   * marker. Revoking the lease is the same change (and does not wait for the TTL);
   * a tailer with the lease witness on knows the TTL had not run out and reads it
   * as no expiry, so tests that use this run their tailer without the witness.
   * Returns the revision and the wall-time window in which it committed.
   */
  async expire(s: Session): Promise<{ revision: string; before: number; after: number }> {
    const before = Date.now();
    const res = await this.client.leaseClient.leaseRevoke({ ID: s.id });
    const after = Date.now();
    const rev = String(res.header.revision);
    for (const lock of s.holds.keys()) this.#record(rev, holdKey(lock), 'expiry');
    s.holds.clear();
    return { revision: rev, before, after };
  }

  async queueEnter(s: Session, path: string): Promise<string> {
    const key = queueKey(this.lock(path), s.id);
    const res = await this.client
      .put(key)
      .value(JSON.stringify({ holder: `spiffe://test/${s.id}`, session: s.id, class: 'payments', at: Date.now() }))
      .lease(s.id)
      .exec();
    const rev = String(res.header.revision);
    this.#record(rev, key, 'queue-enter');
    return rev;
  }

  async queueLeave(s: Session, path: string): Promise<string> {
    const key = queueKey(this.lock(path), s.id);
    const res = await this.client.delete().key(key).exec();
    const rev = String(res.header.revision);
    this.#record(rev, key, 'queue-leave');
    return rev;
  }

  async putClass(name: string): Promise<string> {
    const value = {
      name,
      namespace: this.ns,
      purpose: 'correctness',
      enforcement: 'fenced',
      ttlSeconds: 15,
      tier: 'entity',
      onQuorumLoss: 'closed',
      fairness: 'memory',
      pauseTest: 'pt-1',
    };
    const res = await this.client.put(classKey(name)).value(JSON.stringify(value)).exec();
    const rev = String(res.header.revision);
    this.#record(rev, classKey(name), 'class-change');
    return rev;
  }

  /** A clock write as the tailer leader makes it (signed, tailer/clock/clockWriter.ts): a revision every watch sees. */
  async clock(): Promise<string> {
    return String(await writeClock(this.client, this.#secret));
  }

  /**
   * At least `revisions` revisions of concurrent lock traffic for benches: rounds of 400 grants on
   * 8 sessions, a quarter released with marks, then every session expires (no clock writes).
   */
  async history(revisions: number): Promise<void> {
    const head = async (): Promise<bigint> => BigInt((await this.client.kv.range({ key: Buffer.from(PREFIX.clock), count_only: true })).header.revision);
    const start = await head();
    for (let round = 0; (await head()) - start < BigInt(revisions); round += 1) {
      const sessions: Session[] = await Promise.all(Array.from({ length: 8 }, () => this.session()));
      await Promise.all(
        Array.from({ length: 400 }, async (_, j) => {
          const s = sessions[j % 8] as Session;
          await this.grant(s, `h${round}/${j}`);
          if (j % 4 === 0) await this.release(s, `h${round}/${j}`);
        }),
      );
      for (const s of sessions) await this.expire(s);
    }
  }

  /** A mixed run: `rounds` × (grants, a release, a force-release, queue traffic, a session close, an expiry). */
  async mixed(rounds: number): Promise<void> {
    for (let r = 0; r < rounds; r += 1) {
      const a = await this.session();
      const b = await this.session();
      await this.grant(a, `r${r}/x`);
      await this.grant(a, `r${r}/y`);
      await this.grant(b, `r${r}/z`);
      await this.queueEnter(b, `r${r}/x`);
      await this.release(a, `r${r}/x`);
      await this.queueLeave(b, `r${r}/x`);
      await this.grant(b, `r${r}/x`);
      await this.forceRelease(b, `r${r}/z`);
      if (r % 5 === 0) await this.putClass(`cls-${this.ns}-${r}`.toLowerCase());
      await this.closeSession(a);
      await this.expire(b);
    }
  }
}
