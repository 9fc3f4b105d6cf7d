// The faults a chaos run injects, each one switchable by name, and the
// schedule the seed derives: every enabled kind at least once per cycle, in
// a seeded order, spread over the run with seeded jitter.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Recorder } from './recorder.js';
import type { ChaosRng } from './rng.js';
import type { Stack } from './stack.js';
import type { Workload } from './workload.js';

export const FAULT_KINDS = [
  'tailer-kill', // kill -9 the tailer leader (the platform process), start it again
  'tailer-pause', // SIGSTOP it past the election TTL, then SIGCONT: a zombie leader
  'etcd-member-kill', // kill -9 an etcd follower, start it again
  'etcd-leader-kill', // kill -9 etcd's own leader, start it again
  'minio-stop', // MinIO down ~30 s
  'redis-stop', // Redis down ~30 s
  'compact', // the tailer down while etcd is compacted past its checkpoint
  'restore', // etcd restored from an earlier snapshot, then a two-person epoch advance
  'outage', // two of three members down: no quorum, fail-open grants
  'mass-expiry', // >= 5 000 holds on one lease expire at one revision
  'force-release', // force-releases with and without revokeSession
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Background workload switches (not scheduled: they run all along). */
export const BACKGROUND_KINDS = ['foreign-writes', 'bad-values', 'insider-writes', 'session-lapses'] as const;
export type BackgroundKind = (typeof BACKGROUND_KINDS)[number];

export interface FaultContext {
  stack: Stack;
  recorder: Recorder;
  workload: Workload;
  rng: ChaosRng;
  electionTtlSeconds: number;
  serviceDownSeconds: number;
  massExpiryHolds: number;
  /** --bump-revision of a restore; undefined: 0 or 1 000 000 by seed. */
  restoreBump?: number;
  log: (m: string) => void;
}

/**
 * What the run knows, in revisions, about a fault that may cost history —
 * the only source from which the checker lets a gap excuse a change.
 * Revisions are decimal strings.
 */
export type FaultFacts =
  | {
      kind: 'compact';
      /** The tailer's checkpoint as the API reported it just before the platform was killed (a lower bound of the true one). */
      checkpointAtStop: string;
      /** etcd was compacted at this revision. */
      compactRevision: string;
    }
  | {
      kind: 'restore';
      /** The snapshot's revision: the restored cluster holds every change up to it. */
      snapshotRevision: string;
      /** --bump-revision (0: none): the restored cluster's revisions continue above snapshot + bump. */
      bump: string;
      /** The tailer's checkpoint as the API reported it just before etcd was stopped (a lower bound of what it had captured). */
      checkpointBefore: string;
      /** etcd's head when the restore began, and the highest revision any stopped member had applied (the old era's true end). */
      headBefore: string;
      oldEraEnd: string;
      /** The recorder held every change up to headBefore before etcd was stopped. */
      recorderReached: boolean;
      epochAdvanced: boolean;
    };

export interface FaultRecord {
  kind: FaultKind;
  /** The recorder's era when the fault began (a restore ends it: its changes after are the next era's). */
  era: number;
  startedAt: number;
  endedAt: number;
  detail: string;
  ok: boolean;
  facts?: FaultFacts;
}

let snapshotSeq = 0;
let lastSnapshot: { file: string; revision: bigint; at: number } | undefined;

/** Taken early in each cycle, so a later `restore` rolls back real history. */
export async function takeSnapshot(ctx: FaultContext): Promise<void> {
  const file = path.join(ctx.stack.options.dataDir, `snapshot-${snapshotSeq++}.db`);
  try {
    const revision = await ctx.stack.snapshot(file);
    lastSnapshot = { file, revision, at: Date.now() };
    ctx.log(`snapshot at revision ${revision}: ${file}`);
  } catch (err) {
    ctx.log(`snapshot failed: ${(err as Error).message.split('\n')[0]}`);
  }
}

async function etcdHead(ctx: FaultContext): Promise<bigint> {
  const client = ctx.stack.etcdClient();
  try {
    return BigInt((await client.get('/sys/epoch').exec()).header.revision);
  } finally {
    client.close();
  }
}

/** The tailer's checkpoint as the API reports it (undefined when the API does not answer). */
async function apiCheckpoint(ctx: FaultContext): Promise<bigint | undefined> {
  // Under load one answer can time out (the 30-minute run, seed 7: four compactions not injected for it); the
  // checkpoint only grows, so an answer from a few seconds before the kill is still a bound below it.
  for (let attempt = 0; attempt < 5; attempt++) {
    const res = await ctx.stack.api('GET', '/v1/tailers', ctx.workload.tokens.investigator);
    const items = (res.body.items ?? []) as Array<{ checkpoint?: string }>;
    const c = items[0]?.checkpoint;
    if (c !== undefined) return BigInt(c);
    await sleep(2_000);
  }
  return undefined;
}

interface Injected {
  detail: string;
  facts?: FaultFacts;
  /** The fault happened but not as planned (the run then tests less than it says): the run is invalid. */
  failed?: string;
}

export async function inject(kind: FaultKind, ctx: FaultContext): Promise<FaultRecord> {
  const startedAt = Date.now();
  const era = ctx.recorder.era;
  let detail = '';
  let ok = true;
  let facts: FaultFacts | undefined;
  try {
    const done = await run(kind, ctx);
    detail = done.detail;
    facts = done.facts;
    if (done.failed) {
      ok = false;
      detail = `${detail}; failed: ${done.failed}`;
    }
  } catch (err) {
    ok = false;
    detail = `failed: ${(err as Error).message.split('\n')[0]}`;
  }
  const record: FaultRecord = { kind, era, startedAt, endedAt: Date.now(), detail, ok, ...(facts ? { facts } : {}) };
  ctx.log(`fault ${kind}: ${detail} (${Math.round((record.endedAt - startedAt) / 1000)} s)`);
  return record;
}

async function run(kind: FaultKind, ctx: FaultContext): Promise<Injected> {
  const { stack } = ctx;
  switch (kind) {
    case 'tailer-kill': {
      const pid = stack.platformPid;
      await stack.stopPlatform('SIGKILL');
      await sleep(ctx.rng.int(500, 3_000));
      await stack.startPlatform();
      return { detail: `kill -9 ${pid}, restarted as ${stack.platformPid}` };
    }
    case 'tailer-pause': {
      const pid = stack.platformPid;
      const pauseMs = (ctx.electionTtlSeconds + ctx.rng.int(2, 6)) * 1000;
      stack.pausePlatform();
      await sleep(pauseMs);
      stack.resumePlatform();
      return { detail: `SIGSTOP ${pid} for ${pauseMs / 1000} s (election TTL ${ctx.electionTtlSeconds} s), SIGCONT` };
    }
    case 'etcd-member-kill':
    case 'etcd-leader-kill': {
      const { leader } = await stack.etcdMembers();
      const all = ['etcd-1', 'etcd-2', 'etcd-3'];
      const victim = kind === 'etcd-leader-kill' ? leader : ctx.rng.pick(all.filter((m) => m !== leader));
      if (!victim) throw new Error('no etcd leader to be found');
      await stack.killMember(victim);
      await sleep(ctx.rng.int(4_000, 10_000));
      await stack.startMember(victim);
      await stack.waitEtcdHealthy();
      return { detail: `kill -9 ${victim}${kind === 'etcd-leader-kill' ? ' (the leader)' : ''}, started again` };
    }
    case 'minio-stop':
    case 'redis-stop': {
      const which = kind === 'minio-stop' ? 'minio' : 'redis';
      await stack.stopService(which);
      await sleep(ctx.serviceDownSeconds * 1000);
      await stack.startService(which);
      return { detail: `${which} down ${ctx.serviceDownSeconds} s` };
    }
    case 'compact': {
      // The tailer cannot follow while it is down; history moves on and is compacted away under it.
      const checkpointAtStop = await apiCheckpoint(ctx);
      await stack.stopPlatform('SIGKILL');
      if (checkpointAtStop === undefined) {
        await stack.startPlatform();
        throw new Error('the API did not report the checkpoint before the kill: no bound for the gap');
      }
      for (let i = 0; i < 20; i++) await ctx.workload.foreignGrant().catch(() => {});
      for (let i = 0; i < 10; i++) await ctx.workload.manualDelete().catch(() => {});
      const head = await etcdHead(ctx);
      // Never past the recorder: the checker must still know every change.
      if (!(await ctx.recorder.waitFor(head, 30_000))) throw new Error(`the recorder did not reach ${head}`);
      const client = stack.etcdClient();
      try {
        await client.kv.compact({ revision: String(head), physical: true });
      } finally {
        client.close();
      }
      await stack.startPlatform();
      return {
        detail: `platform killed at checkpoint ≥ ${checkpointAtStop}, 30 direct writes, compacted at ${head}, platform restarted`,
        facts: { kind: 'compact', checkpointAtStop: String(checkpointAtStop), compactRevision: String(head) },
      };
    }
    case 'restore': {
      const snap = lastSnapshot;
      if (!snap) throw new Error('no snapshot taken yet');
      const coin = ctx.rng.chance(0.5) ? 0 : 1_000_000;
      const bump = ctx.restoreBump ?? coin;
      const checkpointBefore = await apiCheckpoint(ctx);
      const head = await etcdHead(ctx);
      const recorderReached = await ctx.recorder.waitFor(head, 20_000);
      for (const i of [1, 2, 3]) await stack.stopMember(`etcd-${i}`);
      ctx.recorder.expectRestore(snap.revision + BigInt(bump));
      const { oldHead } = await stack.restore(snap.file, bump);
      await stack.waitEtcdHealthy();
      // The platform must notice on its own; then two operators advance the epoch.
      let advanced = false;
      for (let attempt = 0; attempt < 20 && !advanced; attempt++) {
        advanced = await ctx.workload.epochAdvance();
        if (!advanced) await sleep(2_000);
      }
      const facts: FaultFacts = {
        kind: 'restore',
        snapshotRevision: String(snap.revision),
        bump: String(bump),
        checkpointBefore: String(checkpointBefore ?? 0n),
        headBefore: String(head),
        oldEraEnd: String(oldHead ?? head),
        recorderReached,
        epochAdvanced: advanced,
      };
      const failed = [
        ...(advanced ? [] : ['the epoch advance was not approved']),
        ...(recorderReached ? [] : [`the recorder did not reach ${head} before etcd stopped`]),
        ...(oldHead === undefined ? ["the old members' head could not be read"] : []),
      ];
      return {
        detail: `restored snapshot of revision ${snap.revision} (head was ${head}, old era ended at ${oldHead ?? '?'}, checkpoint ≥ ${checkpointBefore ?? '?'}; ${bump ? `--bump-revision ${bump} --mark-compacted` : 'same cluster token, no bump: cluster id unchanged'}); epoch advance ${advanced ? 'approved' : 'FAILED'}`,
        facts,
        ...(failed.length ? { failed: failed.join('; ') } : {}),
      };
    }
    case 'outage': {
      await stack.stopMember('etcd-2');
      await stack.stopMember('etcd-3');
      await sleep(ctx.rng.int(15_000, 25_000));
      await stack.startMember('etcd-2');
      await stack.startMember('etcd-3');
      await stack.waitEtcdHealthy();
      return { detail: 'etcd-2 and etcd-3 down (no quorum): fail-open classes grant from memory' };
    }
    case 'mass-expiry': {
      await ctx.workload.massExpiry(ctx.massExpiryHolds);
      await sleep(8_000);
      return { detail: `${ctx.massExpiryHolds} holds on one lease, left to expire` };
    }
    case 'force-release': {
      // Under load a set-up step can time out (each attempt uses fresh keys and a fresh identity, and writes its truth only
      // once approved): three tries each before the fault counts as not injected.
      const attempt = async (revoke: boolean): Promise<boolean> => {
        for (let i = 0; i < 3; i++) {
          if (await ctx.workload.forceRelease(revoke)) return true;
          await sleep(3_000);
        }
        return false;
      };
      const a = await attempt(true);
      const b = await attempt(false);
      if (!a || !b) throw new Error(`force-release ${a ? '' : 'with revokeSession '}${b ? '' : 'without revokeSession '}did not go through`);
      return { detail: 'one with revokeSession (3 holds), one without' };
    }
  }
}

/** Expected seconds a fault takes, for spreading the schedule. */
export function faultSeconds(kind: FaultKind, ctx: Pick<FaultContext, 'electionTtlSeconds' | 'serviceDownSeconds'>): number {
  switch (kind) {
    case 'tailer-kill':
      return 12;
    case 'tailer-pause':
      return ctx.electionTtlSeconds + 6;
    case 'etcd-member-kill':
    case 'etcd-leader-kill':
      return 12;
    case 'minio-stop':
    case 'redis-stop':
      return ctx.serviceDownSeconds + 3;
    case 'compact':
      return 20;
    case 'restore':
      return 30;
    case 'outage':
      return 25;
    case 'mass-expiry':
      return 12;
    case 'force-release':
      return 5;
  }
}
