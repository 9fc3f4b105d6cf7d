// Readiness state shared by the roles of one process: alarms raised by the
// tailer and exporters degrade /readyz; dependency checks are cached so a
// busy probe does not hammer the dependencies.
import type { AlarmCode, RaisedAlarm } from './alarms.js';
import type { CheckResult } from './dependencyChecks.js';

export interface Alarm {
  code: AlarmCode;
  name: string;
  message: string;
  since: string;
}

/** One stage of the end-to-end canary: how long ago the newest canary lock passed it, and its bound. */
export interface CanaryStageView {
  cluster: string;
  stage: string;
  /** null: no canary lock passed it since the process started (its age counts from the start). */
  passedAt: string | null;
  ageSeconds: number;
  boundSeconds: number;
  behind: boolean;
}

/** Readiness state shared by the roles of one process: alarms raised by the tailer and exporters degrade /readyz. */
export class HealthState {
  readonly #alarms = new Map<string, Alarm>();
  #peerAlarms = new Map<string, Alarm[]>();
  #cached: { at: number; checks: CheckResult[] } | undefined;
  #canary: CanaryStageView[] | undefined;
  #inflight: Promise<CheckResult[]> | undefined;

  /** Raises an alarm of the catalog (platform/alarms.ts); a raised instance keeps its first message and time. */
  raise(alarm: RaisedAlarm): void {
    if (!this.#alarms.has(alarm.name)) this.#alarms.set(alarm.name, { ...alarm, since: new Date().toISOString() });
  }

  clear(name: string): void {
    this.#alarms.delete(name);
  }

  alarms(): Alarm[] {
    return [...this.#alarms.values()];
  }

  /**
   * The alarms of the other role processes of one `lockaudit start` (platform/roleStatus.ts), as the supervisor
   * last forwarded them: listed beside this process's own for admins (/readyz), never counted in its metrics.
   */
  setPeerAlarms(byRole: ReadonlyMap<string, Alarm[]>): void {
    this.#peerAlarms = new Map(byRole);
  }

  /** This process's alarms and its peers' (each peer's named with its role). */
  allAlarms(): Array<Alarm & { role?: string }> {
    return [...this.alarms(), ...[...this.#peerAlarms].flatMap(([role, list]) => list.map((a) => ({ ...a, role })))];
  }

  /** The canary's stages as its monitor last judged them (roles/canary/): shown in /readyz. */
  setCanary(stages: CanaryStageView[]): void {
    this.#canary = stages;
  }

  canary(): CanaryStageView[] | undefined {
    return this.#canary;
  }

  /** Dependency checks, cached for `maxAgeMs` so a busy probe does not hammer the dependencies. */
  async checks(run: () => Promise<CheckResult[]>, maxAgeMs = 2_000): Promise<CheckResult[]> {
    if (this.#cached && Date.now() - this.#cached.at < maxAgeMs) return this.#cached.checks;
    this.#inflight ??= run().then((checks) => {
      this.#cached = { at: Date.now(), checks };
      this.#inflight = undefined;
      return checks;
    });
    return this.#inflight;
  }
}
