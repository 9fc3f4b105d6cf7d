// Acquire (docs/architecture.md, the lock service's rules): one txn — hold absent AND /sys/epoch unchanged
// (AND the class unchanged AND the session alive AND the grant guard not
// below this process's latest grant, see epoch.ts) → put the hold on the
// session lease. The token is computed once from that txn's revision and
// never re-read. Waiters queue per key in memory (durable classes under
// /q/ in etcd); a release seen is only a hint, every grant is a full txn.
import { EtcdLeaseInvalidError, type ITxnResponse } from 'etcd3';
import { isLockauditError, LockauditError } from '../core/errors.js';
import {
  CANARY_NAMESPACE,
  decodeValue,
  HoldValueSchema,
  parseLockName,
  type HoldValue,
  type LockClass,
  type MarkValue,
  type QueueValue,
} from '../core/keyspace.js';
import { holdMac } from '../core/proof.js';
import { makeToken } from '../core/token.js';
import type { CachedClass } from './classes.js';
import type { LockParts } from './context.js';
import { cmp, op, toKv, type Kv } from './kv.js';
import type { RefusalReason } from './lockMetrics.js';
import type { SessionRecord } from './sessions.js';

export interface AcquireInput {
  identity: string;
  key: string;
  session: string;
  className: string;
  waitMs: number;
  /**
   * Aborted when the caller is gone (its HTTP connection closed): the wait ends at once and nothing
   * is granted to nobody — a grant whose txn was already in flight is taken back with a release marker.
   */
  signal?: AbortSignal;
  /** The platform's canary (roles/canary/loop.ts): the one caller granted locks in CANARY_NAMESPACE. Never set from a request. */
  canary?: boolean;
}

export interface Grant {
  key: string;
  token: bigint;
  epoch: number;
  /** The revision of the granting txn; "0" for an unprotected grant. */
  revision: string;
  enforcement: LockClass['enforcement'];
  unprotected: boolean;
  waitMs: number;
}

type Attempt = { kind: 'granted'; grant: Grant } | { kind: 'retry' } | { kind: 'requeue' } | { kind: 'wait'; revision: string };

const REASON_BY_CODE: Record<string, RefusalReason> = {
  LOCKAUDIT_ERR_LOCK_NOT_GRANTED: 'timeout',
  LOCKAUDIT_ERR_LOCK_SEALED: 'sealed',
  LOCKAUDIT_ERR_LOCK_HIGHWATER_UNKNOWN: 'sealed',
  LOCKAUDIT_ERR_QUORUM_LOST: 'quorum-lost',
  LOCKAUDIT_ERR_SESSION_NOT_FOUND: 'session',
  LOCKAUDIT_ERR_CLASS_NOT_FOUND: 'class',
  LOCKAUDIT_ERR_CLASS_UNPROVEN: 'class',
  LOCKAUDIT_ERR_LOCK_CLASS_MISMATCH: 'class',
  LOCKAUDIT_ERR_LOCK_ALREADY_HELD: 'already-held',
  LOCKAUDIT_ERR_LOCK_LEAK: 'leak',
  LOCKAUDIT_ERR_SPOOL_WRITE: 'spool',
  LOCKAUDIT_ERR_LOCK_ABANDONED: 'abandoned',
};

function notGranted(key: string, waitMs: number): LockauditError {
  return new LockauditError('LOCKAUDIT_ERR_LOCK_NOT_GRANTED', `${key}: held by someone else and not released within waitMs ${waitMs}`);
}

function abandoned(key: string): LockauditError {
  return new LockauditError('LOCKAUDIT_ERR_LOCK_ABANDONED', `${key}: the caller disconnected while waiting; nothing was granted`);
}

/** The class must govern the key's namespace, and the session's TTL must be the class's (a hold lives on its session's lease). */
function assertFits(key: string, namespace: string, lockClass: LockClass, session: SessionRecord, sessionId: string): void {
  if (lockClass.namespace !== namespace) {
    throw new LockauditError(
      'LOCKAUDIT_ERR_LOCK_CLASS_MISMATCH',
      `class: "${lockClass.name}" governs namespace "${lockClass.namespace}", not "${namespace}" (key ${key})`,
    );
  }
  if (session.ttlSeconds !== lockClass.ttlSeconds) {
    throw new LockauditError(
      'LOCKAUDIT_ERR_LOCK_CLASS_MISMATCH',
      `session: ${sessionId} has ttlSeconds ${session.ttlSeconds} but class "${lockClass.name}" holds for ${lockClass.ttlSeconds} s; create a session with ttlSeconds ${lockClass.ttlSeconds}`,
    );
  }
}

export async function acquire(parts: LockParts, input: AcquireInput): Promise<Grant> {
  const name = parseLockName(input.key);
  if (!name) throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', 'body.key: is not a lock name <namespace>/<path>');
  // A grant there would read as the canary's progress: only the canary is granted in its namespace.
  if ((name.namespace === CANARY_NAMESPACE) !== (input.canary === true))
    throw new LockauditError(
      'LOCKAUDIT_ERR_VALIDATION',
      input.canary
        ? `the canary acquires only in namespace ${CANARY_NAMESPACE}`
        : `body.key: namespace ${CANARY_NAMESPACE} is reserved for the platform's canary`,
    );
  const started = Date.now();
  let lockClass: LockClass | undefined = parts.classes.cached(input.className)?.value;
  try {
    if (parts.etcd.quorum.lost) return await failOpen(parts, input, name.namespace, started);
    await parts.epoch.ready();
    // Sealed: judge again as GET /v1/epoch does (an advance made through another process unseals).
    if (parts.epoch.sealed) await parts.epoch.probe();
    parts.epoch.assertUnsealed();
    const cls = await parts.classes.get(input.className);
    lockClass = cls.value;
    const session = await parts.sessions.get(input.identity, input.session);
    assertFits(input.key, name.namespace, cls.value, session, input.session);
    const grant = await grantLoop(parts, input, name.namespace, session, started);
    parts.metrics.granted(cls.value, grant.waitMs, false);
    return grant;
  } catch (err) {
    if (isLockauditError(err, 'LOCKAUDIT_ERR_QUORUM_LOST') && !parts.etcd.quorum.lost) throw err;
    if (isLockauditError(err, 'LOCKAUDIT_ERR_QUORUM_LOST')) {
      // The quorum went away mid-request: open classes still get their grant.
      try {
        return await failOpen(parts, input, name.namespace, started);
      } catch (inner) {
        err = inner;
      }
    }
    const reason = isLockauditError(err) ? REASON_BY_CODE[err.code] : undefined;
    if (reason) parts.metrics.refused(lockClass ?? parts.classes.cached(input.className)?.value, reason);
    throw err;
  }
}

/** Grants without quorum: open classes from memory with token 0 (spooled), closed classes refused. */
async function failOpen(parts: LockParts, input: AcquireInput, namespace: string, started: number): Promise<Grant> {
  const lost = new Date(parts.etcd.quorum.lostSince || Date.now()).toISOString();
  let cls: CachedClass | undefined = parts.classes.cached(input.className);
  if (cls)
    cls = parts.classes.usable(input.className); // a class without the API's proof never fails open
  else {
    try {
      cls = await parts.classes.get(input.className);
    } catch (err) {
      if (isLockauditError(err, 'LOCKAUDIT_ERR_CLASS_UNPROVEN')) throw err;
      throw new LockauditError(
        'LOCKAUDIT_ERR_QUORUM_LOST',
        `etcd has no quorum (since ${lost}) and class "${input.className}" is not known to this API, so nothing can be granted`,
        { cause: err },
      );
    }
  }
  const lockClass = cls.value;
  if (lockClass.onQuorumLoss !== 'open') {
    throw new LockauditError(
      'LOCKAUDIT_ERR_QUORUM_LOST',
      `etcd has no quorum (since ${lost}); class "${lockClass.name}" is onQuorumLoss: closed (${lockClass.purpose}, ${lockClass.enforcement}), so it gets no grant until the quorum returns`,
    );
  }
  let session = parts.sessions.cached(input.session);
  if (!session) {
    try {
      session = await parts.sessions.get(input.identity, input.session, { serializable: true });
    } catch (err) {
      if (isLockauditError(err, 'LOCKAUDIT_ERR_SESSION_NOT_FOUND')) throw err;
      throw new LockauditError('LOCKAUDIT_ERR_QUORUM_LOST', `etcd has no quorum (since ${lost}) and session ${input.session} is not known to this API`, {
        cause: err,
      });
    }
  }
  if (session.identity !== input.identity) await parts.sessions.get(input.identity, input.session); // throws the usual not-found
  assertFits(input.key, namespace, lockClass, session, input.session);
  const remaining = Math.max(0, input.waitMs - (Date.now() - started));
  await parts.failOpen.grant({
    key: input.key,
    namespace,
    holder: input.identity,
    session: input.session,
    lockClass,
    waitMs: remaining,
    epoch: parts.epoch.provenRecord?.epoch ?? 0,
  });
  const waitMs = Date.now() - started;
  parts.metrics.granted(lockClass, waitMs, true);
  parts.logger.info({ key: input.key, class: lockClass.name, holder: input.identity }, 'unprotected grant without quorum (token 0, spooled)');
  return {
    key: input.key,
    token: 0n,
    epoch: parts.epoch.provenRecord?.epoch ?? 0,
    revision: '0',
    enforcement: lockClass.enforcement,
    unprotected: true,
    waitMs,
  };
}

async function grantLoop(parts: LockParts, input: AcquireInput, namespace: string, session: SessionRecord, started: number): Promise<Grant> {
  const deadline = started + input.waitMs;
  let cls = await parts.classes.get(input.className);
  const durable = () => cls.value.fairness === 'durable';
  const ticket = parts.waiters.enter(input.key, durable() ? 'broadcast' : 'fifo');
  const queueKey = parts.keys.queue(input.key, input.session);
  let queued = false;
  let granted = false;
  let unsubscribe: (() => void) | undefined;
  // A caller that left wakes its ticket, so the wait ends now rather than at waitMs.
  const { signal } = input;
  const onAbort = (): void => ticket.wake();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      if (signal?.aborted) throw abandoned(input.key);
      if (!(await ticket.turn(deadline, signal))) throw signal?.aborted ? abandoned(input.key) : notGranted(input.key, input.waitMs);
      if (signal?.aborted) throw abandoned(input.key);
      const attempt = await tryGrant(parts, input, cls, session, started, queued ? queueKey : undefined);
      if (attempt.kind === 'granted') {
        if (signal?.aborted) {
          // The caller left while the granting txn was in flight: nobody would ever release this hold.
          await takeBack(parts, input, attempt.grant.revision, 'lockaudit:caller-disconnected');
          throw abandoned(input.key);
        }
        granted = true;
        return attempt.grant;
      }
      if (attempt.kind === 'requeue') {
        queued = false;
        continue;
      }
      if (attempt.kind === 'retry') {
        cls = parts.classes.usable(input.className); // a class changed by hand meanwhile is refused here
        assertFits(input.key, namespace, cls.value, session, input.session);
        continue;
      }
      if (Date.now() >= deadline) throw notGranted(input.key, input.waitMs);
      if (durable() && !queued) {
        queued = await enqueue(parts, input, queueKey, cls.value.name);
        if (!queued) continue;
      }
      unsubscribe ??= parts.hints.subscribe(
        input.key,
        { key: parts.keys.hold(input.key), prefix: durable() ? parts.keys.queuePrefix(input.key) : undefined },
        String(BigInt(attempt.revision) + 1n),
      );
      // Poll with jitter as well: a watch is a hint and may be lost.
      const poll = parts.pollMs * (0.75 + Math.random() * 0.5);
      await ticket.hint(Math.min(poll, Math.max(0, deadline - Date.now())));
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    ticket.leave();
    unsubscribe?.();
    if (queued && !granted) {
      // Leaving the durable queue is a queue-leave event; best effort (the key is on the session lease anyway).
      await parts.etcd.txn([cmp.lease(queueKey, input.session)], [op.del(queueKey)]).catch(() => undefined);
      parts.waiters.notify(input.key);
    }
  }
}

/** Puts this session's durable waiter key; false when the session already waits here under another request. */
async function enqueue(parts: LockParts, input: AcquireInput, queueKey: string, className: string): Promise<boolean> {
  const value: QueueValue = { holder: input.identity, session: input.session, class: className, at: Date.now() };
  const res = await parts.etcd.txn(
    [cmp.absent(queueKey), cmp.exists(parts.keys.session(input.session))],
    [op.put(queueKey, value, input.session)],
    [op.get(queueKey)],
  );
  if (res.succeeded) return true;
  const existing = res.responses[0]?.response_range.kvs[0];
  if (existing) throw new LockauditError('LOCKAUDIT_ERR_LOCK_ALREADY_HELD', `${input.key}: this session already waits for it`);
  parts.sessions.forget(input.session);
  throw new LockauditError(
    'LOCKAUDIT_ERR_SESSION_NOT_FOUND',
    `session ${input.session}: no live session of yours has this id (it expired, was closed, or never existed)`,
  );
}

async function tryGrant(
  parts: LockParts,
  input: AcquireInput,
  cls: CachedClass,
  session: SessionRecord,
  started: number,
  queueKey: string | undefined,
): Promise<Attempt> {
  const { keys, epoch } = parts;
  const holdKey = keys.hold(input.key);
  const sessionKey = keys.session(input.session);
  const durable = cls.value.fairness === 'durable';
  if (queueKey) {
    // Durable order: only the waiter with the lowest create revision may try.
    const head = await parts.etcd.getPrefix(keys.queuePrefix(input.key), { limit: 1 });
    if (head.kvs[0]?.key !== queueKey) {
      if (!head.kvs[0]) return { kind: 'requeue' }; // our waiter key is gone (e.g. the lease lapsed): queue again
      return { kind: 'wait', revision: String(head.header.revision) };
    }
  }
  // Judged in the same synchronous step as the record and revision the txn compares: a /sys/epoch put by hand and
  // read while this acquire waited must seal it here, never be compared (and obeyed) by the txn.
  epoch.assertUnsealed();
  const record = epoch.record;
  if (!record) throw new LockauditError('LOCKAUDIT_ERR_INTERNAL', 'the epoch record is not loaded');
  const epochRevision = epoch.modRevision;
  const generation = epoch.generation;
  const at = Date.now();
  const fields = { holder: input.identity, session: input.session, class: cls.value.name, epoch: record.epoch, waitMs: at - started, at };
  // Proof of origin: the tailer records a hold without a valid MAC as a grant not made by the API.
  const hold: HoldValue = { ...fields, mac: holdMac(parts.originSecret, holdKey, fields) };
  // The grant guard: at or above this process's latest grant, or etcd was rewound and this txn must write nothing.
  const guard = epoch.grantGuard();
  const compare = [cmp.absent(holdKey), cmp.mod(keys.epoch(), epochRevision), cmp.mod(keys.class(cls.value.name), cls.modRevision), cmp.exists(sessionKey)];
  if (guard > 0n) compare.push(cmp.modAtLeast(keys.grantGuard(), guard));
  if (durable) compare.push(queueKey ? cmp.exists(queueKey) : cmp.noneUnder(keys.queuePrefix(input.key)));
  const success = [op.put(holdKey, hold, input.session), op.put(sessionKey, session, input.session), op.put(keys.grantGuard(), { epoch: record.epoch })];
  if (queueKey) success.push(op.del(queueKey));
  const floor = epoch.writeFloor();
  const res = await parts.etcd.txn(compare, success, [
    op.get(holdKey),
    op.get(keys.epoch()),
    op.get(keys.class(cls.value.name)),
    op.get(sessionKey),
    op.get(keys.grantGuard()),
  ]);
  if (res.succeeded) {
    const revision = String(res.header.revision);
    try {
      await epoch.confirmWrite(floor, BigInt(revision)); // a rewind seals; else the mark is durable before the token leaves
    } catch (err) {
      // The mark could not be made durable, or the shared high-water not read: no token leaves, the hold goes.
      await undoSealedGrant(parts, input, holdKey, revision).catch(() => undefined);
      throw err;
    }
    if (epoch.sealed) {
      await undoSealedGrant(parts, input, holdKey, revision);
      epoch.assertUnsealed();
    }
    // Computed once, from this txn's own revision: never re-read (ADR-002).
    const token = makeToken(record.epoch, revision);
    return {
      kind: 'granted',
      grant: { key: input.key, token, epoch: record.epoch, revision, enforcement: cls.value.enforcement, unprotected: false, waitMs: hold.waitMs },
    };
  }
  return classifyFailure(parts, input, res, epochRevision, generation, cls, guard);
}

function rangeKv(res: ITxnResponse, i: number): Kv | undefined {
  const kv = res.responses[i]?.response_range.kvs[0];
  return kv ? toKv(kv) : undefined;
}

function classifyFailure(
  parts: LockParts,
  input: AcquireInput,
  res: ITxnResponse,
  epochRevision: string,
  generation: number,
  cls: CachedClass,
  guard: bigint,
): Attempt {
  const [hold, epochKv, classKv, sessionKv, guardKv] = [0, 1, 2, 3, 4].map((i) => rangeKv(res, i));
  if (!sessionKv) {
    parts.sessions.forget(input.session);
    throw new LockauditError(
      'LOCKAUDIT_ERR_SESSION_NOT_FOUND',
      `session ${input.session}: no live session of yours has this id (it expired, was closed, or never existed)`,
    );
  }
  if (epochKv && epochKv.modRevision !== epochRevision) {
    parts.epoch.accept(epochKv, generation); // ignored when an advance took a newer record meanwhile: the retry uses it
    parts.epoch.assertUnsealed();
    return { kind: 'retry' };
  }
  parts.epoch.judgeGuard(guardKv?.modRevision, guard);
  parts.epoch.assertUnsealed();
  if (!classKv) {
    parts.classes.drop(cls.value.name);
    throw new LockauditError('LOCKAUDIT_ERR_CLASS_NOT_FOUND', `class "${cls.value.name}" is no longer registered`);
  }
  if (classKv.modRevision !== cls.modRevision) {
    parts.classes.accept(cls.value.name, classKv);
    return { kind: 'retry' };
  }
  if (hold) {
    const value = decodeValue(HoldValueSchema, hold.value);
    if (value?.session === input.session || hold.lease === input.session) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_LOCK_ALREADY_HELD',
        `${input.key}: this session already holds it; nested acquires are counted by the client, not granted twice`,
      );
    }
    if (value?.holder === input.identity) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_LOCK_LEAK',
        `${input.key}: you already hold it under session ${value.session}; a second session waiting for it would wait for itself (a leaked hold)`,
      );
    }
  }
  // Held by someone else, or durable waiters are ahead of us: wait.
  return { kind: 'wait', revision: String(res.header.revision) };
}

/**
 * A grant that succeeded on a cluster whose id no longer matches /sys/epoch
 * (a restore noticed by this very response) is taken back at once, with a
 * release marker, and refused.
 */
async function undoSealedGrant(parts: LockParts, input: AcquireInput, holdKey: string, revision: string): Promise<void> {
  await takeBack(parts, input, revision, 'lockaudit:seal', holdKey);
}

/** Deletes the hold created at `revision` (and only that one) with a release marker naming why. */
async function takeBack(parts: LockParts, input: AcquireInput, revision: string, by: string, holdKey = parts.keys.hold(input.key)): Promise<void> {
  const mark: MarkValue = { kind: 'release', by, at: Date.now(), key: input.key, session: input.session, grant: revision };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await parts.etcd.txn([cmp.created(holdKey, revision)], [op.del(holdKey), await parts.markers.put(mark)]);
      return;
    } catch (err) {
      if (!(err instanceof EtcdLeaseInvalidError)) throw err;
      parts.markers.invalidate();
    }
  }
}
