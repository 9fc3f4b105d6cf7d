// Delivery of one batch of alert events to a sink's endpoint: rendered as
// lines (OCSF JSON or CEF), signed, POSTed until the receiver acknowledges
// (2xx) with jittered exponential backoff, or recorded in alert_dead_letters
// (payload kept) after maxAttempts. Shared by the log and register streams.
import type { AuditStore } from '../../core/clickhouse.js';
import type { AlertWebhookConfig } from '../../core/config.js';
import type { Logger } from '../../core/logger.js';
import { backoffDelay, sleep } from '../../platform/retry.js';
import type { AlertEvent } from './alertEvent.js';
import type { AlertMetrics } from './alertMetrics.js';
import { forSink, toCef, toOcsf } from './formats.js';
import { SIGNATURE_HEADER, sign } from './signature.js';

export interface PosterDeps {
  store: AuditStore;
  log: Logger;
  metrics: AlertMetrics;
  /** '' for events of no cluster (risk-register waivers). */
  cluster: string;
  sink: AlertWebhookConfig;
  /** The key tokens are hashed with before they leave (core/tokenHash.ts): a SIEM never receives a token. */
  tokenKey: Buffer;
  /** Injected in tests; defaults to global fetch. */
  fetchFn?: typeof fetch;
}

export function sinkSettings(s: AlertWebhookConfig) {
  return {
    batchSize: s.batchSize ?? 200,
    maxAttempts: s.maxAttempts ?? 20,
    backoffMaxMs: s.backoffMaxMs ?? 30_000,
    pollIntervalMs: s.pollIntervalMs ?? 1_000,
    timeoutMs: s.timeoutMs ?? 10_000,
    format: s.format ?? 'ocsf',
  };
}

/** The project's backoff from 100 ms; `backoffMaxMs` is the longest wait, jitter included. */
export function backoffMs(attempt: number, capMs: number, random: () => number = Math.random): number {
  return Math.min(capMs, backoffDelay({ initialMs: 100, maxMs: capMs }, attempt, random));
}

export class BatchPoster {
  readonly #d: PosterDeps;
  readonly #settings: ReturnType<typeof sinkSettings>;
  readonly #labels: { sink: string; cluster: string };

  constructor(deps: PosterDeps) {
    this.#d = deps;
    this.#settings = sinkSettings(deps.sink);
    this.#labels = { sink: deps.sink.name, cluster: deps.cluster };
  }

  render(events: readonly AlertEvent[]): string {
    const lines = events.map((event) => {
      const e = forSink(event, this.#d.tokenKey);
      return this.#settings.format === 'cef' ? toCef(e) : JSON.stringify(toOcsf(e));
    });
    return `${lines.join('\n')}\n`;
  }

  /** POSTs until acknowledged, or dead-letters after maxAttempts. false only when stopped first. */
  async deliver(events: readonly AlertEvent[], signal: AbortSignal): Promise<boolean> {
    if (events.length === 0) return true;
    const body = this.render(events);
    const fetchFn = this.#d.fetchFn ?? fetch;
    let lastError = '';
    for (let attempt = 1; attempt <= this.#settings.maxAttempts; attempt += 1) {
      if (signal.aborted) return false;
      try {
        const res = await fetchFn(this.#d.sink.url, {
          method: 'POST',
          headers: {
            'content-type': this.#settings.format === 'cef' ? 'text/plain; charset=utf-8' : 'application/x-ndjson',
            [SIGNATURE_HEADER]: sign(this.#d.sink.secret, body, Date.now()),
            // Register (waiver) events belong to no cluster.
            ...(this.#d.cluster ? { 'x-lockaudit-cluster': this.#d.cluster } : {}),
          },
          body,
          signal: AbortSignal.any([signal, AbortSignal.timeout(this.#settings.timeoutMs)]),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (res.ok) {
          this.#d.metrics.delivered.inc(this.#labels, events.length);
          return true;
        }
        lastError = `HTTP ${res.status}`;
      } catch (err) {
        if (signal.aborted) return false;
        lastError = (err as Error).message;
      }
      this.#d.metrics.failures.inc(this.#labels);
      this.#d.log.warn({ sink: this.#d.sink.name, cluster: this.#d.cluster, attempt, err: lastError }, 'alert delivery failed; retrying');
      if (attempt < this.#settings.maxAttempts) await sleep(backoffMs(attempt, this.#settings.backoffMaxMs), signal);
    }
    if (signal.aborted) return false;
    const lines = body.trimEnd().split('\n');
    await this.#d.store.insert(
      'alert_dead_letters',
      events.map((e, i) => ({
        sink: this.#d.sink.name,
        cluster: this.#d.cluster,
        event_id: e.id,
        payload: lines[i] ?? '',
        attempts: this.#settings.maxAttempts,
        last_error: lastError.slice(0, 1000),
        at: Date.now(),
      })),
    );
    this.#d.metrics.deadLetters.inc(this.#labels, events.length);
    this.#d.log.error(
      { sink: this.#d.sink.name, cluster: this.#d.cluster, events: events.length, err: lastError },
      'alert delivery gave up: events recorded in alert_dead_letters',
    );
    return true;
  }
}

/**
 * A sink stream's loop: passes back to back while a pass says more is waiting, else a poll-interval pause;
 * a failed pass (the store away) is reported and tried again after the pause. Ends when `signal` aborts.
 */
export async function runPasses(
  step: (signal: AbortSignal) => Promise<boolean>,
  pollIntervalMs: number,
  signal: AbortSignal,
  onError: (err: Error) => void,
): Promise<void> {
  while (!signal.aborted) {
    let more = false;
    try {
      more = await step(signal);
    } catch (err) {
      onError(err as Error);
    }
    if (!more) await sleep(pollIntervalMs, signal);
  }
}
