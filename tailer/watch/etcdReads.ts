// Point reads of etcd history the tailer needs beside the watch: is a
// revision still readable (not compacted), the clock write nearest a
// revision, and the head.
import type { Etcd3, IKeyValue } from 'etcd3';
import { ClockValueSchema, PREFIX, decodeValue } from '../../core/keyspace.js';
import { hasValidClockProof } from '../../core/proof.js';
import type { ClockPoint } from '../clock/clockBracket.js';
import { sleep } from '../../platform/retry.js';

const CLOCK = Buffer.from(PREFIX.clock);

export function isCompactedError(err: unknown): boolean {
  return err instanceof Error && /compacted/i.test(err.message);
}

export async function headRevision(client: Etcd3): Promise<bigint> {
  const res = await client.kv.range({ key: CLOCK, count_only: true });
  return BigInt(res.header.revision);
}

/**
 * etcd's compact revision: the oldest revision still readable (0 when nothing
 * was ever compacted). etcd does not report it in any status call, so it is
 * found by reading history: `knownAtLeast` (an earlier answer — it only moves
 * forward) makes the usual case one read, a moved one a binary search.
 */
export async function compactRevision(client: Etcd3, knownAtLeast = 0n): Promise<bigint> {
  const lowest = knownAtLeast > 1n ? knownAtLeast : 1n;
  if (await isReadable(client, lowest)) return knownAtLeast > 1n ? knownAtLeast : 0n;
  let lo = lowest + 1n;
  let hi = await headRevision(client);
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    if (await isReadable(client, mid)) hi = mid;
    else lo = mid + 1n;
  }
  return lo;
}

/** false when `revision` was compacted away. */
export async function isReadable(client: Etcd3, revision: bigint): Promise<boolean> {
  try {
    await client.kv.range({ key: CLOCK, count_only: true, revision: revision.toString() });
    return true;
  } catch (err) {
    if (isCompactedError(err)) return false;
    throw err;
  }
}

async function clockAt(client: Etcd3, revision?: bigint): Promise<IKeyValue | undefined> {
  const res = await client.kv.range(revision === undefined ? { key: CLOCK } : { key: CLOCK, revision: revision.toString() });
  return res.kvs[0];
}

/** A clock write as an anchor: with a secret only a proven one (core/proof.ts hasValidClockProof), as the decoder takes them. */
function point(kv: IKeyValue, secret: Buffer | undefined): ClockPoint | undefined {
  const v = decodeValue(ClockValueSchema, kv.value.toString('utf8'));
  if (!v || (secret && !hasValidClockProof(secret, v, { createRevision: kv.create_revision, version: kv.version }))) return undefined;
  return { revision: BigInt(kv.mod_revision), at: v.at };
}

/** Unproven clock writes stepped over looking back, at most: an anchor further back is only a looser bound, and none is allowed. */
const STEP_BACK = 8;

/** The last proven clock write at or before `revision`; undefined when none (within STEP_BACK writes) or compacted. */
export async function clockAtOrBefore(client: Etcd3, revision: bigint, secret?: Buffer): Promise<ClockPoint | undefined> {
  return (await clockLookup(client, revision, secret)).point;
}

/**
 * What clockAtOrBefore found; `settled` when it is what etcd gives at that revision for as long as the revision is
 * readable: the write there was itself the answer, or there was none. An answer found by stepping back over unproven
 * writes is not: a compaction past the write stepped back to turns it into none (streamClock.ts carries only settled
 * answers).
 */
export interface ClockLookup {
  point: ClockPoint | undefined;
  settled: boolean;
}

export async function clockLookup(client: Etcd3, revision: bigint, secret?: Buffer): Promise<ClockLookup> {
  try {
    for (let at = revision, step = 0; at >= 1n && step < STEP_BACK; step += 1) {
      const kv = await clockAt(client, at);
      if (!kv) return { point: undefined, settled: step === 0 };
      const p = point(kv, secret);
      if (p) return { point: p, settled: step === 0 };
      at = BigInt(kv.mod_revision) - 1n;
    }
    return { point: undefined, settled: false };
  } catch (err) {
    if (isCompactedError(err)) return { point: undefined, settled: false };
    throw err;
  }
}

/**
 * The first clock write after `revision`: waits (polling) until one exists,
 * then binary-searches history for the earliest. If that history was
 * compacted, the current clock is still a valid (looser) upper bound.
 */
export async function firstClockAfter(client: Etcd3, revision: bigint, signal: AbortSignal, secret?: Buffer): Promise<ClockPoint | undefined> {
  for (;;) {
    if (signal.aborted) return undefined;
    const found = await clockAfterNow(client, revision, secret);
    if (found) return found;
    await sleep(250, signal);
  }
}

/** The first clock write after `revision` if etcd already holds one (never waits for one); undefined when none yet. */
export async function clockAfterNow(client: Etcd3, revision: bigint, secret?: Buffer): Promise<ClockPoint | undefined> {
  const now = await clockAt(client);
  // An unproven current write: none yet (the writer's next one, a second on, will be).
  const current = now ? point(now, secret) : undefined;
  if (!current || current.revision <= revision) return undefined;
  let lo = revision + 1n;
  let hi = current.revision;
  try {
    while (lo < hi) {
      const mid = (lo + hi) / 2n;
      const kv = await clockAt(client, mid);
      const m = kv ? BigInt(kv.mod_revision) : 0n;
      if (m > revision) hi = m;
      else lo = mid + 1n;
    }
    const kv = await clockAt(client, hi);
    // The earliest write after `revision` unproven: the current one still bounds it, more loosely.
    return (kv && point(kv, secret)) ?? current;
  } catch (err) {
    if (isCompactedError(err)) return current;
    throw err;
  }
}
