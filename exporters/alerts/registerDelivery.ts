// One alert sink's stream of risk-register waivers: for every stored register
// run (nightly or on demand) it has not delivered, one event per class whose
// waiver status its rules can match (waiver-expired / waiver-expiring), id
// `register:<runId>:<class>`, through the same poster as the log (signed,
// retried, dead-lettered). The run is recorded as delivered only after the
// receiver acknowledged (or the batch was dead-lettered): at least once, and a
// re-sent run carries the same ids. Runs are not per cluster: one loop per sink.
import { loadSql } from '../../platform/sql.js';
import { fromRegisterRow, type RegisterClassRow, type RegisterRunRow } from './alertEvent.js';
import { BatchPoster, runPasses, sinkSettings, type PosterDeps } from './batchPoster.js';
import { matches, waiverStatuses } from './rules.js';

const PENDING = loadSql('exporters/alerts/registerPending.sql');
const CLASSES = loadSql('exporters/alerts/registerClasses.sql');

export type RegisterDeliveryDeps = Omit<PosterDeps, 'cluster'>;

export class RegisterDelivery {
  readonly #d: RegisterDeliveryDeps;
  readonly #poster: BatchPoster;
  readonly #statuses: string[];
  readonly #pollIntervalMs: number;

  constructor(deps: RegisterDeliveryDeps) {
    this.#d = deps;
    this.#poster = new BatchPoster({ ...deps, cluster: '' });
    this.#statuses = waiverStatuses(deps.sink.rules);
    this.#pollIntervalMs = sinkSettings(deps.sink).pollIntervalMs;
  }

  /** True when some rule names a waiver kind: otherwise the sink needs no register loop. */
  get wanted(): boolean {
    return this.#statuses.length > 0;
  }

  /** Delivers the oldest undelivered run. Returns true when one was handled (there may be more). */
  async step(signal: AbortSignal): Promise<boolean> {
    const [run] = await this.#d.store.rows<RegisterRunRow>(PENDING.text, { sink: this.#d.sink.name });
    if (!run) return false;
    const rows = await this.#d.store.rows<RegisterClassRow>(CLASSES.text, { runId: run.run_id, date: run.register_day, statuses: this.#statuses });
    // Register classes carry no cluster, so a rule's purposes cannot be judged: such a rule does not match them.
    const events = rows.map((r) => fromRegisterRow(run, r)).filter((e) => matches(this.#d.sink.rules, e, () => undefined));
    if (!(await this.#poster.deliver(events, signal))) return false;
    await this.#d.store.insert('alert_register_deliveries', [{ sink: this.#d.sink.name, run_id: run.run_id, events: events.length, at: Date.now() }]);
    return true;
  }

  /** Runs until `signal` aborts; a store error is logged and retried after the poll interval. */
  run(signal: AbortSignal): Promise<void> {
    return runPasses(
      (sig) => this.step(sig),
      this.#pollIntervalMs,
      signal,
      (err) => this.#d.log.warn({ sink: this.#d.sink.name, err: err.message }, 'alert sink register pass failed; retrying'),
    );
  }
}
