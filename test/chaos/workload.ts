// What a chaos run does to the lock keyspace besides faults: the simulator
// (cli/simulate driving the API over HTTP in rounds, since the API it drives
// dies and comes back), direct writes into etcd that bypass the API (good
// holds, bad values, deletes of holds whose lease is alive), a mass expiry
// (thousands of holds on one lease), and force-releases with and without
// revokeSession by two operators. Every action whose right reading the
// checker must know is appended to truth.jsonl.
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Etcd3, Lease } from 'etcd3';
import { simulate, workerIdentity, type SimTokens } from '../../cli/simulate/run.js';
import { HttpTransport } from '../../cli/simulate/transport.js';
import type { ChaosRng } from './rng.js';
import type { ChaosTokens, Stack } from './stack.js';

/** The least time between two hand-put epochs (each seals the lock API until an advance). */
const HAND_EPOCH_EVERY_MS = 150_000;

/** etcd's default --max-txn-ops: the stack runs etcd with its defaults, as users do. */
const TXN_OPS = 128;

/** What the chaos run knows a change must read as. */
export type Expectation =
  | 'foreign-grant' // a hold put straight into etcd, not by the API — also an API hold's value copied back by hand
  | 'manual-delete' // a hold deleted straight in etcd while its lease lived: `deleted`, exactly
  | 'forged-marker-delete' // a hand delete in one txn with a release marker the API never wrote: `deleted`, exactly
  | 'forged-force-delete' // a hand delete in one txn with a force record nobody approved: `deleted`, exactly
  | 'forged-force' // that force record (key /sys/force/<id>): never archived as a genuine one
  | 'expiry' // deleted by etcd when its lease ran out (the mass expiry, and sessions left to lapse)
  | 'revoked' // deleted because a force-release revoked the holder's session: no expiry
  | 'force' // the forced key itself
  | 'bad-value' // a value the decoder cannot take: quarantined or recorded, never lost
  | 'foreign-class' // a lock class put by hand (/sys/class/<name>): its event reads origin foreign, and nothing is granted under it
  | 'request-refused' // a pending force-release edited by hand to name another hold, or written wholly by hand (key /sys/force/<id>): never carried out
  | 'foreign-epoch'; // a /sys/epoch put by hand (key /sys/epoch, its revision): its event reads origin foreign; the API seals until a two-person advance

export interface Truth {
  expect: Expectation;
  key: string;
  /** The revision of the change when known (direct writes); otherwise the key's next change of that kind. */
  revision?: string;
  /** The exact value written, where the revision alone could name another era's change (a restore reuses revisions). */
  value?: string;
  note?: string;
  at: number;
}

export const BAD_VALUES: readonly string[] = [
  '{"holder":"x","session":"1","class":"c","epoch":70000,"waitMs":1e21,"at":0}',
  'not json at all',
  '{"holder":"x","session":"99999999999999999999","class":"c","epoch":1,"waitMs":0,"at":0}',
  '{"holder":"x","session":"1","class":"c","epoch":-1,"waitMs":0,"at":1e300}',
  '',
  '[1,2,3]',
];

export class Workload {
  #truthFile: string;
  #stopped = false;
  #simUntil = Number.MAX_SAFE_INTEGER;
  #simLoop: Promise<void> | undefined;
  #directLoop: Promise<void> | undefined;
  #foreign: Array<{ key: string; lease: Lease }> = [];
  #n = 0;
  #bad = 0;
  #lastHandEpoch = 0;
  /** Epoch advances one at a time: a restore's and a hand-put epoch's would otherwise race for /sys/epoch. */
  #epochTurn: Promise<unknown> = Promise.resolve();
  #forceClient = 0;
  counts = new Map<string, number>();

  constructor(
    readonly stack: Stack,
    readonly tokens: ChaosTokens,
    readonly etcd: Etcd3,
    readonly rng: ChaosRng,
    readonly options: {
      seed: number;
      workers: number;
      rate: number;
      until: number;
      foreignWrites: boolean;
      badValues: boolean;
      insiderWrites?: boolean;
      sessionLapses?: boolean;
      log: (m: string) => void;
    },
  ) {
    this.#truthFile = path.join(stack.options.dataDir, 'truth.jsonl');
  }

  inc(name: string, n = 1): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + n);
  }

  truth(t: Omit<Truth, 'at'>): void {
    appendFileSync(this.#truthFile, `${JSON.stringify({ ...t, at: Date.now() })}\n`);
  }

  get truthFile(): string {
    return this.#truthFile;
  }

  start(): void {
    this.#simLoop = this.#simulator();
    if (this.options.foreignWrites || this.options.badValues || this.options.insiderWrites || this.options.sessionLapses) this.#directLoop = this.#direct();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#simUntil = Date.now();
    await Promise.allSettled([this.#simLoop, this.#directLoop]);
    for (const f of this.#foreign) await f.lease.revoke().catch(() => {});
  }

  // ---- the simulator, in rounds ----------------------------------------------

  // Short rounds (stop() waits for the current one), in this process (no start-up cost per round): a round whose class set-up
  // fails because the API is down is simply tried again a moment later.
  async #simulator(): Promise<void> {
    const tokens: SimTokens = {
      admin: this.tokens.admin,
      operators: [
        { identity: 'sim-alice@corp.example', token: this.tokens.operators[0] },
        { identity: 'sim-bob@corp.example', token: this.tokens.operators[1] },
      ],
      clients: this.tokens.clients.map((token, i) => ({ identity: workerIdentity(i), token })),
    };
    const api = new HttpTransport(this.stack.apiUrl, 10_000);
    for (let round = 1; !this.#stopped; round++) {
      const left = Math.min(this.options.until, this.#simUntil) - Date.now();
      if (left < 5_000) break;
      try {
        const stats = await simulate({
          seed: this.options.seed * 1000 + round,
          durationSeconds: Math.min(Math.floor(left / 1000), 20),
          workers: this.options.workers,
          rate: this.options.rate,
          api,
          tokens,
        });
        const counts = (stats.summary() as { counts?: Record<string, number> }).counts ?? {};
        for (const [k, v] of Object.entries(counts)) this.inc(`simulator: ${k}`, v);
        this.inc('simulator rounds');
      } catch {
        this.inc('simulator rounds cut short (API down at set-up)');
        await sleep(1_000);
      }
    }
  }

  // ---- direct writes that bypass the API -------------------------------------

  async #epoch(): Promise<number> {
    const raw = await this.etcd.get('/sys/epoch').string();
    try {
      return (JSON.parse(raw ?? '{}') as { epoch?: number }).epoch ?? 1;
    } catch {
      return 1;
    }
  }

  async #direct(): Promise<void> {
    while (!this.#stopped && Date.now() < this.options.until) {
      try {
        // One seeded pick among the enabled kinds of direct write, each with its weight.
        const kinds: Array<[number, () => Promise<void>]> = [];
        if (this.options.badValues) kinds.push([3, () => this.badValue()]);
        if (this.options.foreignWrites) kinds.push([4, () => this.foreignGrant()], [3, () => this.manualDelete()]);
        if (this.options.insiderWrites) {
          kinds.push([1, () => this.forgedMarkerDelete()], [1, () => this.copiedHold()], [1, () => this.forgedForce()]);
          kinds.push([1, () => this.editedRequest()], [1, () => this.handRequest()], [1, () => this.handClass()]);
          // Each seals every grant until two operators advance: at most one every few minutes, as an incident would be.
          if (Date.now() - this.#lastHandEpoch > HAND_EPOCH_EVERY_MS) kinds.push([1, () => this.handEpoch()]);
        }
        if (this.options.sessionLapses) kinds.push([1, () => this.sessionLapse()]);
        let roll = this.rng.next() * kinds.reduce((n, [w]) => n + w, 0);
        for (const [w, act] of kinds) {
          if ((roll -= w) < 0) {
            await act();
            break;
          }
        }
      } catch {
        this.inc('direct writes failed (etcd unavailable)');
      }
      await sleep(this.rng.int(1_500, 4_000));
    }
  }

  async foreignGrant(): Promise<void> {
    const lease = this.etcd.lease(120);
    const leaseId = await lease.grant();
    const key = `/l/chaos/foreign-${this.options.seed}-${this.#n++}`;
    const value = JSON.stringify({
      holder: 'spiffe://rogue.example/etcdctl',
      session: leaseId,
      class: 'sim-payments-ledger',
      epoch: await this.#epoch(),
      waitMs: 0,
      at: Date.now(),
    });
    const res = await this.etcd.put(key).value(value).lease(leaseId).exec();
    this.#foreign.push({ key, lease });
    this.truth({ expect: 'foreign-grant', key, revision: res.header.revision });
    this.inc('foreign grants (put straight into etcd)');
  }

  async manualDelete(): Promise<void> {
    const victim = this.#foreign.shift();
    if (!victim) return this.foreignGrant();
    const res = await this.etcd.delete().key(victim.key).exec();
    if (res.deleted === '1') {
      this.truth({ expect: 'manual-delete', key: victim.key, revision: res.header.revision });
      this.inc('manual deletes (lease alive)');
    }
    await victim.lease.revoke().catch(() => {});
  }

  async badValue(): Promise<void> {
    // Every bad value in turn under /l/, then again under /q/: none left to chance.
    const i = this.#bad++;
    const value = BAD_VALUES[i % BAD_VALUES.length] as string;
    const queue = Math.floor(i / BAD_VALUES.length) % 2 === 1;
    const key = queue ? `/q/chaos/bad-${this.options.seed}-${this.#n++}/1` : `/l/chaos/bad-${this.options.seed}-${this.#n++}`;
    const res = await this.etcd.put(key).value(value).exec();
    this.truth({ expect: 'bad-value', key, revision: res.header.revision, note: value });
    this.inc('bad values (put straight into etcd)');
  }

  // ---- an insider with etcdctl (issue 21): forged markers, copied holds, forged force records ----

  /** A session and one key held through the API, for the run's own insider acts (a fresh chaos client each time). */
  async #apiHold(tag: string): Promise<{ client: string; session: string; key: string; token: string } | undefined> {
    const client = this.tokens.chaosClients[this.#forceClient++ % this.tokens.chaosClients.length] as string;
    const session = await this.stack.api('POST', '/v1/sessions', client, { ttlSeconds: 15 });
    if (session.status !== 200 && session.status !== 201) return undefined;
    const id = String(session.body.id);
    const key = `payments/chaos-${tag}-${this.options.seed}-${this.#n++}`;
    const res = await this.stack.api('POST', '/v1/locks/acquire', client, { key, session: id, class: 'sim-payments-ledger', waitMs: 2_000 });
    if (res.status !== 200) {
      await this.stack.api('DELETE', `/v1/sessions/${id}`, client);
      return undefined;
    }
    return { client, session: id, key, token: String(res.body.token) };
  }

  /** A hand delete of a live API hold in one txn with a release marker the API never wrote: must read `deleted`. */
  async forgedMarkerDelete(): Promise<void> {
    const hold = await this.#apiHold('forged-mark');
    if (!hold) return;
    const key = `/l/${hold.key}`;
    const marker = JSON.stringify({ kind: 'release', by: 'spiffe://rogue.example/etcdctl', key: hold.key, session: hold.session, at: Date.now() });
    const res = await this.etcd
      .if(key, 'Create', '>', 0)
      .then(this.etcd.put(`/sys/mark/forged-${this.options.seed}-${this.#n++}`).value(marker), this.etcd.delete().key(key))
      .commit();
    if (res.succeeded) {
      this.truth({ expect: 'forged-marker-delete', key, revision: res.header.revision });
      this.inc('insider: hand deletes under a forged release marker');
    }
    await this.stack.api('DELETE', `/v1/sessions/${hold.session}`, hold.client);
  }

  /** An API hold's own value, put back by hand on the same key and live lease after its release: must read foreign. */
  async copiedHold(): Promise<void> {
    const hold = await this.#apiHold('copied');
    if (!hold) return;
    const key = `/l/${hold.key}`;
    const value = await this.etcd.get(key).string();
    const released = await this.stack.api('POST', '/v1/locks/release', hold.client, { key: hold.key, session: hold.session, token: hold.token });
    if (value === null || released.status !== 200) {
      await this.stack.api('DELETE', `/v1/sessions/${hold.session}`, hold.client);
      return;
    }
    const res = await this.etcd.if(key, 'Create', '==', 0).then(this.etcd.put(key).value(value).lease(hold.session)).commit();
    if (res.succeeded) {
      this.truth({ expect: 'foreign-grant', key, revision: res.header.revision, note: 'an API hold value copied back by hand' });
      this.inc('insider: API hold values copied back by hand');
      // Its end: a hand delete while the session (its lease) lives.
      const del = await this.etcd.delete().key(key).exec();
      if (del.deleted === '1') this.truth({ expect: 'manual-delete', key, revision: del.header.revision });
    }
    await this.stack.api('DELETE', `/v1/sessions/${hold.session}`, hold.client);
  }

  /** A force record nobody approved, written by hand in one txn with the delete of a live foreign hold. */
  async forgedForce(): Promise<void> {
    const lease = this.etcd.lease(60);
    const leaseId = await lease.grant();
    try {
      const n = this.#n++;
      const lock = `chaos/forged-force-${this.options.seed}-${n}`;
      const key = `/l/${lock}`;
      const epoch = await this.#epoch();
      const put = await this.etcd
        .put(key)
        .value(JSON.stringify({ holder: 'spiffe://victim.example/svc', session: leaseId, class: 'sim-payments-ledger', epoch, waitMs: 0, at: Date.now() }))
        .lease(leaseId)
        .exec();
      this.truth({ expect: 'foreign-grant', key, revision: put.header.revision });
      const id = `forged-${this.options.seed}-${n}`;
      const now = Date.now();
      const record = JSON.stringify({
        id,
        key: lock,
        holder: 'spiffe://victim.example/svc',
        session: leaseId,
        token: String((BigInt(epoch) << 48n) + BigInt(put.header.revision)),
        class: 'sim-payments-ledger',
        enforcement: 'fenced',
        requester: 'mallory@corp.example',
        approver: 'eve@corp.example',
        reason: 'never approved',
        requestedAt: now - 1_000,
        approvedAt: now,
        revokedSession: false,
      });
      const res = await this.etcd
        .if(key, 'Create', '>', 0)
        .then(this.etcd.put(`/sys/force/${id}`).value(record).lease(leaseId), this.etcd.delete().key(key))
        .commit();
      if (res.succeeded) {
        this.truth({ expect: 'forged-force-delete', key, revision: res.header.revision });
        this.truth({ expect: 'forged-force', key: `/sys/force/${id}`, revision: res.header.revision });
        this.inc('insider: force records written by hand');
      }
    } finally {
      // The lease outlives the delete (so it was no expiry), and goes only after.
      await sleep(500);
      await lease.revoke().catch(() => {});
    }
  }

  /**
   * A pending force-release of hold A edited by hand to name hold B (issue 39): the approver approves what the
   * API shows them; the approval must be refused (409), neither hold force-released, no force record written.
   */
  async editedRequest(): Promise<void> {
    const a = await this.#apiHold('req-a');
    const b = await this.#apiHold('req-b');
    try {
      if (!a || !b) return;
      const [requester, approver] = this.tokens.operators;
      const req = await this.stack.api('POST', '/v1/force-releases', requester, {
        key: a.key,
        reason: `chaos run ${this.options.seed}: an insider edits this request`,
      });
      if (req.status !== 202) return;
      const id = String(req.body.id);
      const requestKey = `/lockaudit/force-request/${id}`;
      const [stored, target] = await Promise.all([this.etcd.get(requestKey).exec(), this.etcd.get(`/l/${b.key}`).exec()]);
      const kv = stored.kvs[0];
      const bKv = target.kvs[0];
      if (!kv || !bKv) return;
      const edited = {
        ...(JSON.parse(kv.value.toString()) as Record<string, unknown>),
        key: b.key,
        holdCreateRevision: String(bKv.create_revision),
        holdModRevision: String(bKv.mod_revision),
      };
      await this.etcd.put(requestKey).value(JSON.stringify(edited)).lease(String(kv.lease)).exec();
      this.truth({ expect: 'request-refused', key: `/sys/force/${id}` });
      const shown = await this.stack.api('GET', `/v1/force-releases/${id}`, approver);
      const ok = await this.stack.api('POST', `/v1/force-releases/${id}/approve`, approver, { requestHash: shown.body.requestHash });
      this.inc(
        ok.status === 409 && ok.body.error === 'LOCKAUDIT_ERR_REQUEST_UNPROVEN'
          ? 'insider: edited force-release requests refused (409)'
          : `insider: edited force-release request answered ${ok.status} ${String(ok.body.error ?? '')}`,
      );
      await this.stack.api('POST', `/v1/force-releases/${id}/reject`, approver, { reason: 'edited by hand' });
    } finally {
      for (const h of [a, b]) {
        if (!h) continue;
        await this.stack.api('POST', '/v1/locks/release', h.client, { key: h.key, session: h.session, token: h.token });
        await this.stack.api('DELETE', `/v1/sessions/${h.session}`, h.client);
      }
    }
  }

  /**
   * A force-release request written wholly by hand in a colleague's name (issue 39), naming a live API hold: its
   * writer approves it as shown. Refused (409 LOCKAUDIT_ERR_REQUEST_UNPROVEN), nothing released, no force record.
   */
  async handRequest(): Promise<void> {
    const a = await this.#apiHold('req-hand');
    if (!a) return;
    const lease = this.etcd.lease(60, { autoKeepAlive: false });
    try {
      const kv = (await this.etcd.get(`/l/${a.key}`).exec()).kvs[0];
      if (!kv) return;
      const hold = JSON.parse(kv.value.toString()) as Record<string, unknown>;
      const id = `00000000-0000-4000-8000-${String(this.options.seed % 1e6).padStart(6, '0')}${String(this.#n++ % 1e6).padStart(6, '0')}`;
      const approver = this.tokens.operators[1] as string; // the request names sim-alice; sim-bob wrote it and approves it himself
      const request = {
        id,
        key: a.key,
        reason: `chaos run ${this.options.seed}: written by hand`,
        revokeSession: false,
        requester: 'sim-alice@corp.example',
        requestedAt: Date.now(),
        holdCreateRevision: String(kv.create_revision),
        holdModRevision: String(kv.mod_revision),
        holder: hold.holder,
        session: hold.session,
        epoch: hold.epoch,
        at: hold.at,
        class: hold.class,
        enforcement: 'fenced',
      };
      await this.etcd
        .put(`/lockaudit/force-request/${id}`)
        .value(JSON.stringify(request))
        .lease(await lease.grant())
        .exec();
      this.truth({ expect: 'request-refused', key: `/sys/force/${id}` });
      const shown = await this.stack.api('GET', `/v1/force-releases/${id}`, approver);
      const ok = await this.stack.api('POST', `/v1/force-releases/${id}/approve`, approver, { requestHash: shown.body.requestHash });
      this.inc(
        ok.status === 409 && ok.body.error === 'LOCKAUDIT_ERR_REQUEST_UNPROVEN'
          ? 'insider: hand-written force-release requests refused (409)'
          : `insider: hand-written force-release request answered ${ok.status} ${String(ok.body.error ?? '')}`,
      );
      await this.stack.api('POST', `/v1/force-releases/${id}/reject`, approver, { reason: 'written by hand' });
    } finally {
      await lease.revoke().catch(() => {});
      await this.stack.api('POST', '/v1/locks/release', a.client, { key: a.key, session: a.session, token: a.token });
      await this.stack.api('DELETE', `/v1/sessions/${a.session}`, a.client);
    }
  }

  /**
   * `/sys/epoch` put by hand one epoch on, its old proof copied (issue 39): the tailer records it foreign, the lock API
   * seals every grant (LOCKAUDIT_ERR_LOCK_SEALED) and issues no token under it, until two operators advance the epoch.
   */
  async handEpoch(): Promise<void> {
    this.#lastHandEpoch = Date.now();
    await this.#oneEpochAtATime(async () => {
      const kv = (await this.etcd.get('/sys/epoch').exec()).kvs[0];
      const current = kv ? (JSON.parse(kv.value.toString()) as Record<string, unknown>) : {};
      const epoch = typeof current.epoch === 'number' ? current.epoch : 1;
      const value = JSON.stringify({ ...current, epoch: epoch + 1 });
      const put = await this.etcd.put('/sys/epoch').value(value).exec();
      this.truth({ expect: 'foreign-epoch', key: '/sys/epoch', revision: String(put.header.revision), value });
      const operator = this.tokens.operators[0] as string;
      const state = await this.stack.api('GET', '/v1/epoch', operator);
      const hold = await this.#apiHold('hand-epoch');
      if (hold) {
        this.inc('insider: acquires granted under a hand-put epoch');
        await this.stack.api('POST', '/v1/locks/release', hold.client, { key: hold.key, session: hold.session, token: hold.token });
        await this.stack.api('DELETE', `/v1/sessions/${hold.session}`, hold.client);
      } else if (state.body.sealed === true) this.inc('insider: hand-put epochs sealed grants');
      // Ended by two operators as an incident would be: tried again while the platform is down or etcd has no quorum
      // (a fault of the same moment), so the seal lasts as long as the advance takes, not until some later one.
      for (const deadline = Date.now() + 180_000; Date.now() < deadline && !this.#stopped; await sleep(2_000)) {
        if (await this.#advance('an insider put /sys/epoch by hand')) {
          this.inc('insider: hand-put epochs ended by a two-person advance');
          return;
        }
      }
      this.inc('insider: hand-put epochs NOT ended (the advance kept failing)');
    });
  }

  /** Resolves once no epoch operation (a hand-put epoch and the advance that ends it, a restore's advance) is under way. */
  epochSettled(): Promise<void> {
    return this.#epochTurn.then(() => undefined);
  }

  /** Runs `f` after every earlier epoch operation ended. */
  #oneEpochAtATime<T>(f: () => Promise<T>): Promise<T> {
    const turn = this.#epochTurn.then(f, f);
    this.#epochTurn = turn.catch(() => undefined);
    return turn;
  }

  /** A lock class put by hand (issue 39): recorded foreign, and an acquire under it refused (409 LOCKAUDIT_ERR_CLASS_UNPROVEN). */
  async handClass(): Promise<void> {
    const name = `chaos-hand-${this.options.seed}-${this.#n++}`;
    const key = `/sys/class/${name}`;
    const cls = {
      name,
      namespace: 'chaos',
      purpose: 'efficiency',
      enforcement: 'advisory',
      riskOwner: 'mallory@corp.example',
      waiverExpires: '2099-12-31',
      ttlSeconds: 30,
      tier: 'entity',
      onQuorumLoss: 'open',
      fairness: 'memory',
    };
    const put = await this.etcd.put(key).value(JSON.stringify(cls)).exec();
    this.truth({ expect: 'foreign-class', key, revision: String(put.header.revision) });
    const client = this.tokens.chaosClients[this.#forceClient++ % this.tokens.chaosClients.length] as string;
    const session = await this.stack.api('POST', '/v1/sessions', client, { ttlSeconds: 30 });
    if (session.status !== 200 && session.status !== 201) return;
    const res = await this.stack.api('POST', '/v1/locks/acquire', client, {
      key: `chaos/hand-class-${this.#n++}`,
      session: String(session.body.id),
      class: name,
    });
    this.inc(
      res.status === 409 && res.body.error === 'LOCKAUDIT_ERR_CLASS_UNPROVEN'
        ? 'insider: acquires under a hand-put class refused (409)'
        : `insider: acquire under a hand-put class answered ${res.status} ${String(res.body.error ?? '')}`,
    );
    await this.stack.api('DELETE', `/v1/sessions/${String(session.body.id)}`, client);
  }

  /** An ordinary API session left to lapse while holding a key: its hold must read `expiry`. */
  async sessionLapse(): Promise<void> {
    const hold = await this.#apiHold('lapse');
    if (!hold) return;
    this.truth({ expect: 'expiry', key: `/l/${hold.key}`, note: 'an API session left to lapse' });
    this.inc('sessions left to lapse');
  }

  // ---- a mass expiry -------------------------------------------------------

  /** `count` holds on one lease (valid hold values, written straight into etcd), left to expire together. */
  async massExpiry(count: number): Promise<void> {
    // Long enough to write every batch before it lapses (etcd's default limit: 128 ops per txn).
    const lease = this.etcd.lease(15, { autoKeepAlive: false });
    const leaseId = await lease.grant();
    const epoch = await this.#epoch();
    const base = `/l/chaos/mass-${this.options.seed}-${this.#n++}`;
    for (let start = 0; start < count; start += TXN_OPS) {
      const ops = [];
      for (let i = start; i < Math.min(count, start + TXN_OPS); i++) {
        const key = `${base}/k${i}`;
        ops.push(
          this.etcd
            .put(key)
            .value(
              JSON.stringify({ holder: 'spiffe://chaos.lockaudit/mass', session: leaseId, class: 'sim-payments-ledger', epoch, waitMs: 0, at: Date.now() }),
            )
            .lease(leaseId),
        );
      }
      // An always-true compare: one txn per batch of holds, all on the one lease.
      await this.etcd
        .if('/chaos/never-written', 'Version', '==', 0)
        .then(...ops)
        .commit();
    }
    for (let i = 0; i < count; i++) this.truth({ expect: 'expiry', key: `${base}/k${i}` });
    this.inc('mass-expiry holds', count);
    this.options.log(`mass expiry: ${count} holds on lease ${leaseId} under ${base}/, TTL 15 s`);
  }

  // ---- force-releases through the API ---------------------------------------

  async #acquire(client: string, session: string, key: string): Promise<boolean> {
    const res = await this.stack.api('POST', '/v1/locks/acquire', client, { key, session, class: 'sim-payments-ledger', waitMs: 2_000 });
    if (res.status !== 200) this.options.log(`force-release set-up: acquire ${key} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`);
    return res.status === 200;
  }

  /** One session holding `keys`; the first is force-released, with or without revoking the session. */
  async forceRelease(revokeSession: boolean): Promise<boolean> {
    // Not while a hand-put epoch seals every grant (the workload's own insider act): its advance comes first.
    await this.epochSettled();
    // The class's TTL (sim-payments-ledger: 15 s); a fresh identity each time.
    const client = this.tokens.chaosClients[this.#forceClient++ % this.tokens.chaosClients.length] as string;
    const session = await this.stack.api('POST', '/v1/sessions', client, { ttlSeconds: 15 });
    if (session.status !== 200 && session.status !== 201) {
      this.options.log(`force-release set-up: session answered ${session.status}: ${JSON.stringify(session.body).slice(0, 200)}`);
      return false;
    }
    const id = String(session.body.id);
    const n = this.#n++;
    const keys = revokeSession
      ? [
          `payments/chaos-force-${this.options.seed}-${n}-a`,
          `payments/chaos-force-${this.options.seed}-${n}-b`,
          `payments/chaos-force-${this.options.seed}-${n}-c`,
        ]
      : [`payments/chaos-force-${this.options.seed}-${n}-a`];
    for (const key of keys) if (!(await this.#acquire(client, id, key))) return false;
    const [requester, approver] = this.tokens.operators;
    const req = await this.stack.api('POST', '/v1/force-releases', requester, {
      key: keys[0],
      reason: `chaos run ${this.options.seed}: forced`,
      revokeSession,
    });
    if (req.status !== 202) {
      this.options.log(`force-release request answered ${req.status}: ${JSON.stringify(req.body).slice(0, 200)}`);
      return false;
    }
    const shown = await this.stack.api('GET', `/v1/force-releases/${String(req.body.id)}`, approver); // approved as shown
    const ok = await this.stack.api('POST', `/v1/force-releases/${String(req.body.id)}/approve`, approver, { requestHash: shown.body.requestHash });
    if (ok.status !== 200) {
      this.options.log(`force-release approval answered ${ok.status}: ${JSON.stringify(ok.body).slice(0, 200)}`);
      return false;
    }
    this.truth({ expect: 'force', key: `/l/${keys[0]}`, revision: String(ok.body.revision ?? '') || undefined });
    for (const key of keys.slice(1)) this.truth({ expect: 'revoked', key: `/l/${key}` });
    this.inc(revokeSession ? 'force-releases with revokeSession' : 'force-releases without revokeSession');
    if (!revokeSession) await this.stack.api('DELETE', `/v1/sessions/${id}`, client);
    return true;
  }

  /** Two operators advance the epoch (after a restore): request, then the other approves. */
  epochAdvance(): Promise<boolean> {
    return this.#oneEpochAtATime(() => this.#advance('etcd restored from a snapshot'));
  }

  async #advance(why: string): Promise<boolean> {
    const [requester, approver] = this.tokens.operators;
    const req = await this.stack.api('POST', '/v1/epoch/advance', requester, { reason: `chaos run ${this.options.seed}: ${why}` });
    if (req.status !== 202) {
      this.options.log(`epoch advance request answered ${req.status}: ${JSON.stringify(req.body).slice(0, 200)}`);
      return false;
    }
    const ok = await this.stack.api('POST', `/v1/epoch/advance/${String(req.body.id)}/approve`, approver, { requestHash: req.body.requestHash });
    if (ok.status !== 200) {
      this.options.log(`epoch advance approval answered ${ok.status}: ${JSON.stringify(ok.body).slice(0, 200)}`);
      return false;
    }
    this.inc('epoch advances');
    return true;
  }
}
