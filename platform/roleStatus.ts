// The role processes of one `lockaudit start` (cli/supervisor.ts) are one
// platform to its operators: one /metrics to scrape and one /readyz listing
// every alarm. Each role process started by the supervisor (an IPC channel to
// it) sends its metrics and raised alarms every couple of seconds; the
// supervisor forwards the latest of every role to the API process, whose
// /metrics answers them aggregated with its own (prom-client's
// AggregatorRegistry: counters and histograms summed across processes) and
// whose /readyz lists their alarms for admins. A role process run on its own
// (no IPC channel) sends nothing, and serves no /metrics of its own yet.
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import type { Alarm, HealthState } from './health.js';

export interface RoleStatus {
  type: 'lockaudit-role-status';
  role: string;
  pid: number;
  metrics: Array<MetricObjectWithValues<MetricValue<string>>>;
  alarms: Alarm[];
}

export interface PeerStatuses {
  type: 'lockaudit-peer-statuses';
  peers: RoleStatus[];
}

/** Under a supervisor: this role process's status to it every `everyMs`; the stop function ends it. */
export function reportToSupervisor(role: string, metrics: Registry, health: HealthState, everyMs = 2_000): () => void {
  if (typeof process.send !== 'function') return () => undefined;
  const send = async (): Promise<void> => {
    if (!process.connected) return;
    const status: RoleStatus = {
      type: 'lockaudit-role-status',
      role,
      pid: process.pid,
      metrics: (await metrics.getMetricsAsJSON()) as RoleStatus['metrics'],
      alarms: health.alarms(),
    };
    process.send?.(status, undefined, {}, () => undefined);
  };
  void send();
  const timer = setInterval(() => void send().catch(() => undefined), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** In the API process under a supervisor: the other roles' latest statuses, for /metrics and /readyz. */
export class PeerMetrics {
  #peers: RoleStatus[] = [];

  constructor(private readonly health: HealthState) {
    if (typeof process.send !== 'function') return;
    process.on('message', (message: unknown) => {
      if (isPeerStatuses(message)) this.update(message.peers);
    });
  }

  /** The peers' latest statuses, the whole set each time: a role that ended takes its alarms with it. */
  update(peers: RoleStatus[]): void {
    this.#peers = peers;
    this.health.setPeerAlarms(new Map(peers.map((p) => [p.role, p.alarms])));
  }

  /** This process's metrics with its peers', one exposition (content type of `own`). */
  async metrics(own: Registry): Promise<string> {
    if (this.#peers.length === 0) return own.metrics();
    const all = [(await own.getMetricsAsJSON()) as RoleStatus['metrics'], ...this.#peers.map((p) => p.metrics)];
    return AggregatorRegistry.aggregate(all).metrics();
  }
}

function isPeerStatuses(message: unknown): message is PeerStatuses {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as { type?: unknown }).type === 'lockaudit-peer-statuses' &&
    Array.isArray((message as { peers?: unknown }).peers)
  );
}

export function isRoleStatus(message: unknown): message is RoleStatus {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as { type?: unknown }).type === 'lockaudit-role-status' &&
    typeof (message as { role?: unknown }).role === 'string'
  );
}
