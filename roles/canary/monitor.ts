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
import type { CanaryCycle } from './loop.js';
import type { CanaryFollower, StageTimes } from './stages.js';

export const CANARY_STAGES = ['lock', 'stored', 'sealed'] as const;
export type CanaryStage = (typeof CANARY_STAGES)[number];

export interface CanaryMetrics {
  age: Gauge<'cluster' | 'stage'>;
  bound: Gauge<'cluster' | 'stage'>;
}

export const canaryMetrics: (registry: Registry) => CanaryMetrics = oncePerRegistry((registers) => ({
  age: new Gauge({
    name: 'lockaudit_canary_stage_age_seconds',
    help: 'How long ago the newest canary lock passed each stage: lock (granted and released by the lock engine), stored (captured into the store), sealed (under a signed digest).',
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
}): Record<CanaryStage, number> {
  const twice = 2 * s.intervalSeconds * 1000;
  return {
    lock: twice + 15_000,
    stored: twice + 60_000,
    sealed: twice + (s.digestPeriodSeconds + s.digestSettleSeconds) * 1000 + 2 * s.digestPollMs + 60_000,
  };
}

export interface CanaryMonitorOptions {
  cluster: string;
  follower: Pick<CanaryFollower, 'read'>;
  bounds: Record<CanaryStage, number>;
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
  #times: StageTimes = { stored: null, sealed: null, sealedThrough: null };
  #lastError: string | undefined;

  constructor(private readonly o: CanaryMonitorOptions) {
    this.#startedAt = this.#now();
    for (const stage of CANARY_STAGES) o.metrics.bound.set({ cluster: o.cluster, stage }, o.bounds[stage] / 1000);
  }

  #now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** Takes a cycle of the loop, reads the later stages, and judges them all. */
  async observe(cycle?: CanaryCycle): Promise<CanaryView[]> {
    if (cycle?.ok) this.#lock = cycle.at;
    if (cycle && !cycle.ok) this.#lastError = cycle.error;
    try {
      this.#times = await this.o.follower.read(this.#now());
    } catch (err) {
      // Unread: the stages keep their last times and age on; the store's or bucket's own checks say why.
      this.o.logger.warn({ cluster: this.o.cluster, err: (err as Error).message }, 'canary: stages not read');
    }
    return this.judge();
  }

  judge(): CanaryView[] {
    const now = this.#now();
    const at: Record<CanaryStage, number | null> = { lock: this.#lock, stored: this.#times.stored, sealed: this.#times.sealed };
    const views = CANARY_STAGES.map((stage) => {
      const ageMs = now - (at[stage] ?? this.#startedAt);
      return { stage, passedAt: at[stage], ageMs, boundMs: this.o.bounds[stage], behind: ageMs > this.o.bounds[stage] };
    });
    const first = views.find((v) => v.behind)?.stage;
    for (const v of views) {
      const labels = { cluster: this.o.cluster, stage: v.stage };
      this.o.metrics.age.set(labels, v.ageMs / 1000);
      const name = `canary:${this.o.cluster}:${v.stage}`;
      if (!v.behind) {
        this.o.health.clear(name);
        continue;
      }
      const why =
        v.stage === 'lock' && this.#lastError
          ? `; the last cycle failed: ${this.#lastError}`
          : v.stage === first
            ? '; the stages before it keep up: the audit path stops here'
            : `; stage ${first} is behind too`;
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
