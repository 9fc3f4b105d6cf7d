// One alert sink's stream of one cluster's two-person acts (sql/200): every
// request, approval, rejection, cancellation and refused approval the lock API
// recorded. Pending requests live outside the tailed prefixes, so these acts
// are not in the etcd log the other streams read. Each batch is the rows the
// sink has not delivered (a set, sql/210: rows carry their writer's clock and
// can land behind any position by time), posted through the same poster
// (signed, retried, dead-lettered) and recorded only after the receiver
// acknowledged: at least once, with the same ids when re-sent.
import { loadSql } from '../../platform/sql.js';
import { fromTwoPersonRow, type TwoPersonRow } from './alertEvent.js';
import { BatchPoster, runPasses, sinkSettings, type PosterDeps } from './batchPoster.js';
import { matches, ruleKinds, TWO_PERSON_KINDS } from './rules.js';

const PENDING = loadSql('exporters/alerts/twoPersonPending.sql');

export class TwoPersonDelivery {
  readonly #d: PosterDeps;
  readonly #poster: BatchPoster;
  readonly #settings: ReturnType<typeof sinkSettings>;
  readonly #wanted: boolean;

  constructor(deps: PosterDeps) {
    this.#d = deps;
    this.#poster = new BatchPoster(deps);
    this.#settings = sinkSettings(deps.sink);
    this.#wanted = ruleKinds(deps.sink.rules).some((k) => (TWO_PERSON_KINDS as readonly string[]).includes(k));
  }

  /** True when some rule names a two-person kind: otherwise the sink needs no such loop. */
  get wanted(): boolean {
    return this.#wanted;
  }

  /** Delivers one batch of undelivered acts. Returns true when there may be more. */
  async step(signal: AbortSignal): Promise<boolean> {
    const rows = await this.#d.store.rows<TwoPersonRow>(PENDING.text, { sink: this.#d.sink.name, cluster: this.#d.cluster, limit: this.#settings.batchSize });
    if (rows.length === 0) return false;
    const events = rows.map((r) => fromTwoPersonRow(this.#d.cluster, r));
    // Acts are about a lock (a force-release) or the cluster (an epoch advance), never a class: a rule on purposes does not match them.
    if (
      !(await this.#poster.deliver(
        events.filter((e) => matches(this.#d.sink.rules, e, () => undefined)),
        signal,
      ))
    )
      return false;
    const at = Date.now();
    await this.#d.store.insert(
      'alert_two_person_deliveries',
      rows.map((r) => ({ sink: this.#d.sink.name, cluster: this.#d.cluster, row_id: r.row_id, at })),
    );
    return rows.length === this.#settings.batchSize;
  }

  /** Runs until `signal` aborts; a store error is logged and retried after the poll interval. */
  run(signal: AbortSignal): Promise<void> {
    return runPasses(
      (sig) => this.step(sig),
      this.#settings.pollIntervalMs,
      signal,
      (err) => this.#d.log.warn({ sink: this.#d.sink.name, cluster: this.#d.cluster, err: err.message }, 'alert sink two-person pass failed; retrying'),
    );
  }
}
