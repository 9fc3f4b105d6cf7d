// One alert sink for one cluster (Vector's sink model): read a bounded batch
// after the sink's own checkpoint, keep what its rules match, POST it as
// lines, and only when the receiver acknowledged (2xx) move the checkpoint to
// the batch's end. A failed POST is retried with jittered exponential backoff;
// after maxAttempts the batch's events go to alert_dead_letters (payload kept)
// and the sink moves on. At least once, in (revision, key) order per cluster:
// a crash between acknowledgement and checkpoint re-sends the batch with the
// same event ids.
import type { AuditStore } from '../../core/clickhouse.js';
import type { AlertWebhookConfig } from '../../core/config.js';
import type { Logger } from '../../core/logger.js';
import { loadSql } from '../../platform/sql.js';
import { fromLogRow, fromSpoolRow, type AlertEvent, type LogRow, type SpoolRow } from './alertEvent.js';
import type { AlertMetrics } from './alertMetrics.js';
import { toCef, toOcsf } from './formats.js';
import { matches, ruleKinds } from './rules.js';
import { SIGNATURE_HEADER, sign } from './signature.js';

const EVENTS = loadSql('exporters/alerts/events.sql');
const UNPROTECTED = loadSql('exporters/alerts/unprotected.sql');
const POSITION = loadSql('exporters/alerts/position.sql');
const PURPOSES = loadSql('exporters/alerts/classPurposes.sql');

/** Sorts after every etcd key (they start with '/'): "everything at this revision is done". */
const AFTER_ALL_KEYS = '~';

export interface Position {
  revision: bigint;
  key: string;
  spoolMs: number;
  spoolKey: string;
}

export interface DeliveryDeps {
  store: AuditStore;
  log: Logger;
  metrics: AlertMetrics;
  cluster: string;
  sink: AlertWebhookConfig;
  /** Injected in tests; defaults to global fetch. */
  fetchFn?: typeof fetch;
}

export function sinkSettings(s: AlertWebhookConfig) {
  return { batchSize: s.batchSize ?? 200, maxAttempts: s.maxAttempts ?? 20, backoffMaxMs: s.backoffMaxMs ?? 30_000, pollIntervalMs: s.pollIntervalMs ?? 1_000, timeoutMs: s.timeoutMs ?? 10_000, format: s.format ?? 'ocsf' };
}

/** Exponential from 100 ms, capped, with full jitter in its upper half. */
export function backoffMs(attempt: number, capMs: number, random: () => number = Math.random): number {
  const base = Math.min(capMs, 100 * 2 ** Math.min(attempt - 1, 20));
  return Math.round(base / 2 + (random() * base) / 2);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export class WebhookDelivery {
  readonly #d: DeliveryDeps;
  readonly #settings: ReturnType<typeof sinkSettings>;
  readonly #labels: { sink: string; cluster: string };
  readonly #kinds: string[];

  constructor(deps: DeliveryDeps) {
    this.#d = deps;
    this.#settings = sinkSettings(deps.sink);
    this.#labels = { sink: deps.sink.name, cluster: deps.cluster };
    this.#kinds = ruleKinds(deps.sink.rules);
  }

  async #position(): Promise<{ position: Position; through: bigint }> {
    const [row] = await this.#d.store.rows<{ through_revision: string | null; revision: string; key: string; spool_ms: string | number; spool_key: string }>(POSITION.text, { sink: this.#d.sink.name, cluster: this.#d.cluster });
    return {
      position: { revision: BigInt(row?.revision ?? 0), key: row?.key ?? '', spoolMs: Number(row?.spool_ms ?? 0), spoolKey: row?.spool_key ?? '' },
      through: BigInt(row?.through_revision ?? 0),
    };
  }

  #lastSavedMs = 0;

  async #save(p: Position): Promise<void> {
    // updated_at is the ReplacingMergeTree version: strictly increasing, so two saves within one millisecond still order.
    this.#lastSavedMs = Math.max(Date.now(), this.#lastSavedMs + 1);
    await this.#d.store.insert('alert_checkpoints', [{ sink: this.#d.sink.name, cluster: this.#d.cluster, revision: p.revision.toString(), key: p.key, spool_ms: p.spoolMs, spool_key: p.spoolKey, updated_at: this.#lastSavedMs }]);
  }

  /** One pass: deliver up to one batch of the log and one of unprotected grants. Returns true when there may be more. */
  async step(signal: AbortSignal): Promise<boolean> {
    const { position, through } = await this.#position();
    this.#d.metrics.lagRevisions.set(this.#labels, Number(through > position.revision ? through - position.revision : 0n));
    const limit = this.#settings.batchSize;
    const purposes = new Map(
      (await this.#d.store.rows<{ name: string; purpose: string }>(PURPOSES.text, { cluster: this.#d.cluster })).map((r) => [r.name, r.purpose]),
    );
    const purposeOf = (c: string) => purposes.get(c);
    let more = false;

    if (position.revision < through || (position.revision === through && position.key !== AFTER_ALL_KEYS)) {
      const rows = await this.#d.store.rows<LogRow>(EVENTS.text, { cluster: this.#d.cluster, afterRevision: position.revision.toString(), afterKey: position.key, throughRevision: through.toString(), kinds: this.#kinds, limit });
      const events = rows.map((r) => fromLogRow(this.#d.cluster, r));
      const next: Position = { ...position };
      if (rows.length < limit) {
        next.revision = through; // everything durable up to the checkpoint has been read
        next.key = AFTER_ALL_KEYS;
      } else {
        const last = rows[rows.length - 1] as LogRow;
        next.revision = BigInt(last.revision);
        next.key = last.key;
        more = true;
      }
      if (!(await this.#deliver(events.filter((e) => matches(this.#d.sink.rules, e, purposeOf)), signal))) return false;
      await this.#save(next);
      this.#d.metrics.lagRevisions.set(this.#labels, Number(through - next.revision));
      position.revision = next.revision;
      position.key = next.key;
    }

    if (this.#kinds.includes('unprotected-grant')) {
      const rows = await this.#d.store.rows<SpoolRow>(UNPROTECTED.text, { cluster: this.#d.cluster, afterMs: position.spoolMs, afterKey: position.spoolKey, limit });
      if (rows.length > 0) {
        const events = rows.map((r) => fromSpoolRow(this.#d.cluster, r));
        if (!(await this.#deliver(events.filter((e) => matches(this.#d.sink.rules, e, purposeOf)), signal))) return false;
        const last = rows[rows.length - 1] as SpoolRow;
        await this.#save({ ...position, spoolMs: Number(last.ingested_ms), spoolKey: last.key });
        more ||= rows.length === limit;
      }
    }
    return more;
  }

  #render(events: readonly AlertEvent[]): string {
    const lines = events.map((e) => (this.#settings.format === 'cef' ? toCef(e) : JSON.stringify(toOcsf(e))));
    return `${lines.join('\n')}\n`;
  }

  /** POSTs until acknowledged, or dead-letters after maxAttempts. false only when stopped first. */
  async #deliver(events: readonly AlertEvent[], signal: AbortSignal): Promise<boolean> {
    if (events.length === 0) return true;
    const body = this.#render(events);
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
            'x-lockaudit-cluster': this.#d.cluster,
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
      events.map((e, i) => ({ sink: this.#d.sink.name, cluster: this.#d.cluster, event_id: e.id, payload: lines[i] ?? '', attempts: this.#settings.maxAttempts, last_error: lastError.slice(0, 1000), at: Date.now() })),
    );
    this.#d.metrics.deadLetters.inc(this.#labels, events.length);
    this.#d.log.error({ sink: this.#d.sink.name, cluster: this.#d.cluster, events: events.length, err: lastError }, 'alert delivery gave up: events recorded in alert_dead_letters');
    return true;
  }

  /** Runs until `signal` aborts; a store error is logged and retried after the poll interval. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let more = false;
      try {
        more = await this.step(signal);
      } catch (err) {
        this.#d.log.warn({ sink: this.#d.sink.name, cluster: this.#d.cluster, err: (err as Error).message }, 'alert sink pass failed; retrying');
      }
      if (!more) await sleep(this.#settings.pollIntervalMs, signal);
    }
  }
}
