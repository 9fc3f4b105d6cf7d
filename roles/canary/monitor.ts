// The canary's watch: after every cycle of the loop it reads how far each
// stage has followed (stages.ts), sets each stage's age and bound as metrics,
// and raises LOCKAUDIT_ALARM_CANARY_STAGE for a stage past its bound — the
// earliest such stage is where the audit path stopped. A stage never passed
// since the monitor started is as old as the monitor: one that never works
// alarms once its bound has passed.
import { Gauge, type Registry } from 'prom-client';
import { oncePerRegistry } from '../../core/metrics.js';
import type { Logger } from '../../core/logger.js';
import { alarm } from '../../platform/alarms.js';
import type { HealthState } from '../../platform/health.js';
import type { CanaryCycle, CanaryGrant } from './loop.js';
import type { CanaryFollower, StageTimes } from './stages.js';

/** lock → stored → sealed, and each alert sink that subscribes to the canary (`sink:<name>`), also after stored. */
export type CanaryStage = 'lock' | 'stored' | 'sealed' | `sink:${string}`;
export type CanaryBounds = Record<CanaryStage, number>;

/** The stages a stage follows: a stage behind because one of these is behind is not where the path stops. */
const follows = (stage: CanaryStage): CanaryStage[] => (stage === 'lock' ? [] : stage === 'stored' ? ['lock'] : ['lock', 'stored']);

export interface CanaryMetrics {
  age: Gauge<'cluster' | 'stage'>;
  bound: Gauge<'cluster' | 'stage'>;
}

export const canaryMetrics: (registry: Registry) => CanaryMetrics = oncePerRegistry((registers) => ({
  age: new Gauge({
    name: 'lockaudit_canary_stage_age_seconds',
    help: 'How long ago the newest canary lock passed each stage: lock (granted and released by the lock engine), stored (captured into the store), sealed (under a signed digest), sink:<name> (delivered to an alert sink that subscribes to the canary).',
    labelNames: ['cluster', 'stage'],
    registers,
  }),
  bound: new Gauge({
    name: 'lockaudit_canary_stage_bound_seconds',
    help: 'The age past which a canary stage alarms (LOCKAUDIT_ALARM_CANARY_STAGE); deploy/prometheus alerts on age above it.',
    labelNames: ['cluster', 'stage'],
    registers,
  }),
}));

/** Each stage's bound from the settings: the interval twice, plus what the stage itself may take when healthy. */
export function canaryBounds(s: {
  intervalSeconds: number;
  digestPeriodSeconds: number;
  digestSettleSeconds: number;
  digestPollMs: number;
  /** The alert sinks that subscribe to the canary, with their poll interval. */
  sinks?: ReadonlyArray<{ name: string; pollMs: number }>;
}): CanaryBounds {
  const twice = 2 * s.intervalSeconds * 1000;
  const bounds: CanaryBounds = {
    lock: twice + 15_000,
    stored: twice + 60_000,
    sealed: twice + (s.digestPeriodSeconds + s.digestSettleSeconds) * 1000 + 2 * s.digestPollMs + 60_000,
  };
  for (const sink of s.sinks ?? []) bounds[`sink:${sink.name}`] = twice + 2 * sink.pollMs + 60_000;
  return bounds;
}

export interface CanaryMonitorOptions {
  cluster: string;
  follower: Pick<CanaryFollower, 'read'>;
  /** The loop's grants the later stages follow (loop.ts grants()). */
  grants: () => readonly CanaryGrant[];
  /** A read of the stages that takes longer is given up on (its stages age on, said as unread). Default 30 000 ms. */
  readTimeoutMs?: number;
  /** Every stage followed, in order (lock, stored, sealed, then the sinks'), with its bound in ms. */
  bounds: CanaryBounds;
  health: HealthState;
  metrics: CanaryMetrics;
  logger: Logger;
  now?: () => number;
}

export interface CanaryView {
  stage: CanaryStage;
  /** When the newest canary lock passed the stage (ms); null: none has since this process started watching. */
  passedAt: number | null;
  ageMs: number;
  boundMs: number;
  behind: boolean;
}

export class CanaryMonitor {
  readonly #startedAt: number;
  #lock: number | null = null;
  #times: StageTimes = { stored: null, sealed: null, sealedThrough: null, sinks: {}, unread: {} };
  #lastError: string | undefined;
  /** A read still running: the next cycles judge without starting another (a read that hangs cannot pile up). */
  #reading: Promise<void> | undefined;
  /** Why each raised alarm was raised: a changed reason raises it again with the new message. */
  readonly #raisedWhy = new Map<string, string>();
  /** What could not be read last, said once when it changes. */
  #unreadSaid = '';

  constructor(private readonly o: CanaryMonitorOptions) {
    this.#startedAt = this.#now();
    for (const [stage, bound] of this.#stages()) o.metrics.bound.set({ cluster: o.cluster, stage }, bound / 1000);
  }

  /** Each stage with its bound, in order. */
  #stages(): Array<[CanaryStage, number]> {
    return Object.entries(this.o.bounds) as Array<[CanaryStage, number]>;
  }

  #passedAt(stage: CanaryStage): number | null {
    if (stage === 'lock') return this.#lock;
    if (stage === 'stored' || stage === 'sealed') return this.#times[stage];
    return this.#times.sinks[stage.slice('sink:'.length)] ?? null;
  }

  #now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** Takes a cycle of the loop, reads the later stages (unless a read is still running), and judges them all. */
  async observe(cycle?: CanaryCycle): Promise<CanaryView[]> {
    if (cycle?.ok) {
      this.#lock = cycle.at;
      this.#lastError = undefined;
    }
    if (cycle && !cycle.ok) this.#lastError = cycle.error;
    if (this.#reading === undefined) {
      const reading = this.o.follower.read(this.o.grants(), this.#times).then(
        (times) => {
          this.#times = times;
        },
        (err: unknown) => {
          // Unread: the stages keep their last times and age on, said as unread.
          this.#times = { ...this.#times, unread: { '*': (err as Error).message } };
        },
      );
      this.#reading = reading.finally(() => (this.#reading = undefined));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        reading.then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), this.o.readTimeoutMs ?? 30_000))),
      ]).finally(() => clearTimeout(timer));
      if (timedOut) this.#times = { ...this.#times, unread: { '*': `no answer within ${this.o.readTimeoutMs ?? 30_000} ms` } };
    }
    const unread = Object.entries(this.#times.unread)
      .map(([stage, why]) => `${stage}: ${why}`)
      .join('; ');
    if (unread && unread !== this.#unreadSaid)
      this.o.logger.warn({ cluster: this.o.cluster, unread }, 'canary: stages not read (said again only when it changes)');
    this.#unreadSaid = unread;
    return this.judge();
  }

  judge(): CanaryView[] {
    const now = this.#now();
    const views = this.#stages().map(([stage, boundMs]) => {
      const passedAt = this.#passedAt(stage);
      const ageMs = now - (passedAt ?? this.#startedAt);
      return { stage, passedAt, ageMs, boundMs, behind: ageMs > boundMs };
    });
    const behind = new Set(views.filter((v) => v.behind).map((v) => v.stage));
    for (const v of views) {
      const labels = { cluster: this.o.cluster, stage: v.stage };
      this.o.metrics.age.set(labels, v.ageMs / 1000);
      const name = `canary:${this.o.cluster}:${v.stage}`;
      if (!v.behind) {
        this.o.health.clear(name);
        this.#raisedWhy.delete(name);
        continue;
      }
      const before = follows(v.stage).find((s) => behind.has(s));
      const unread = v.stage === 'lock' ? undefined : (this.#times.unread[v.stage] ?? this.#times.unread['*']);
      const why =
        v.stage === 'lock' && this.#lastError
          ? `; the last cycle failed: ${this.#lastError}`
          : before !== undefined
            ? `; stage ${before} is behind too`
            : unread !== undefined
              ? `; its progress could not be read (${unread})`
              : '; the stages before it keep up: the audit path stops here';
      // The message says where the path stops: when that changes, the alarm is raised again with the new one.
      if (this.#raisedWhy.get(name) !== why) this.o.health.clear(name);
      this.#raisedWhy.set(name, why);
      this.o.health.raise(
        alarm(
          'LOCKAUDIT_ALARM_CANARY_STAGE',
          { cluster: this.o.cluster, stage: v.stage },
          { ageSeconds: Math.round(v.ageMs / 1000), boundSeconds: Math.round(v.boundMs / 1000), why },
        ),
      );
    }
    this.o.health.setCanary(
      views.map((v) => ({
        cluster: this.o.cluster,
        stage: v.stage,
        passedAt: v.passedAt === null ? null : new Date(v.passedAt).toISOString(),
        ageSeconds: Math.round(v.ageMs / 1000),
        boundSeconds: Math.round(v.boundMs / 1000),
        behind: v.behind,
      })),
    );
    return views;
  }
}
