// Release: only the holder, presenting its session and token. One txn
// deletes the hold and writes the `release` marker at the same revision.
import { EtcdLeaseInvalidError } from 'etcd3';
import { LockauditError } from '../core/errors.js';
import { decodeValue, HoldValueSchema, type MarkValue } from '../core/keyspace.js';
import { splitToken } from '../core/token.js';
import type { LockParts } from './context.js';
import { cmp, op, toKv } from './kv.js';

export interface ReleaseInput {
  identity: string;
  key: string;
  session: string;
  token: bigint;
}

export interface Released {
  key: string;
  released: true;
  /** The revision of the releasing txn; "0" for an unprotected (token 0) hold. */
  revision: string;
  unprotected: boolean;
}

function notHolder(key: string): LockauditError {
  return new LockauditError(
    'LOCKAUDIT_ERR_LOCK_NOT_HOLDER',
    `${key}: this session and token do not hold it (it was released, expired or force-released, or the token is from an earlier grant)`,
  );
}

export async function release(parts: LockParts, input: ReleaseInput): Promise<Released> {
  const usable = !parts.etcd.quorum.lost;
  const session = parts.sessions.cached(input.session) ?? (usable ? await parts.sessions.get(input.identity, input.session) : undefined);
  if (!session || session.identity !== input.identity) await parts.sessions.get(input.identity, input.session);

  if (input.token === 0n) {
    // Token 0 is an unprotected grant made from memory without quorum; its end is spooled before this answers.
    const hold = await parts.failOpen.release(input.key, input.session);
    if (!hold) throw notHolder(input.key);
    parts.metrics.released(parts.classes.cached(hold.class)?.value, Date.now() - hold.at);
    parts.waiters.notify(input.key);
    return { key: input.key, released: true, revision: '0', unprotected: true };
  }

  await parts.epoch.ready();
  const { epoch, revision } = splitToken(input.token);
  const holdKey = parts.keys.hold(input.key);
  // Tokens are issued under the proven record only: one put by hand changes no token (nor who may release).
  if (epoch !== BigInt(parts.epoch.provenRecord?.epoch ?? -1)) {
    // A token of an earlier epoch: every hold of that epoch was deleted by the advance.
    parts.metrics.fenced(undefined);
    throw notHolder(input.key);
  }
  // Bound to the one grant it ends (its create revision): a copy of this marker can explain no other delete.
  const mark: MarkValue = { kind: 'release', by: input.identity, at: Date.now(), key: input.key, session: input.session, grant: revision.toString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    let res;
    try {
      res = await parts.etcd.txn(
        [cmp.created(holdKey, revision.toString()), cmp.lease(holdKey, input.session)],
        [op.get(holdKey), op.del(holdKey), await parts.markers.put(mark)],
        [op.get(holdKey)],
      );
    } catch (err) {
      if (err instanceof EtcdLeaseInvalidError && attempt === 0) {
        parts.markers.invalidate();
        continue;
      }
      throw err;
    }
    const kv = res.responses[0]?.response_range.kvs[0];
    const hold = kv ? decodeValue(HoldValueSchema, toKv(kv).value) : undefined;
    const lockClass = hold ? parts.classes.cached(hold.class)?.value : undefined;
    if (!res.succeeded) {
      parts.metrics.fenced(lockClass);
      throw notHolder(input.key);
    }
    if (hold) parts.metrics.released(lockClass, Date.now() - hold.at);
    parts.waiters.notify(input.key);
    return { key: input.key, released: true, revision: String(res.header.revision), unprotected: false };
  }
  throw new LockauditError('LOCKAUDIT_ERR_INTERNAL', 'release: the marker lease kept vanishing');
}
