// One alert sink for one cluster (Vector's sink model): read a bounded batch
// after the sink's own checkpoint, keep what its rules match, POST it as
// lines, and only when the receiver acknowledged (2xx) move the checkpoint to
// the batch's end. A failed POST is retried with jittered exponential backoff;
// after maxAttempts the batch's events go to alert_dead_letters (payload kept)
// and the sink moves on. At least once, in (revision, key) order per cluster
// and etcd timeline: a crash between acknowledgement and checkpoint re-sends
// the batch with the same event ids.
// Timelines (sql/065, sql/120): a restore starts a new timeline whose
// revisions reuse the old one's numbers, so the position is (generation,
// revision, key). A sink reads its timeline through that timeline's
// checkpoint — the current one's as the tailer reads it, an ended one's where
// the restore found it — then enters the next timeline at the last revision
// both share: the restore gap and the new timeline's events at reused
// revisions are delivered. Event ids of a later timeline name it.
import { PREFIX } from '../../core/keyspace.js';
import { loadSql } from '../../platform/sql.js';
import { fromLogRow, fromSpoolRow, type LogRow, type SpoolRow } from './alertEvent.js';
import { BatchPoster, runPasses, sinkSettings, type PosterDeps } from './batchPoster.js';
import { logKinds, matches, ruleKinds } from './rules.js';

const EVENTS = loadSql('exporters/alerts/events.sql');
const UNPROTECTED = loadSql('exporters/alerts/unprotected.sql');
const POSITION = loadSql('exporters/alerts/position.sql');
const PURPOSES = loadSql('exporters/alerts/classPurposes.sql');
const TIMELINES = loadSql('exporters/alerts/timelines.sql');
// The checkpoint in effect, as the tailer reads it (timeline-aware): the one SQL reading of it (grants/), shared with the reports.
const CHECKPOINTS = loadSql('grants/checkpointInEffect.sql');

/** Sorts after every etcd key (they start with '/'): "everything at this revision is done". */
const AFTER_ALL_KEYS = '~';

export interface Position {
  /** The etcd timeline (etcd_timelines.generation) the sink is in. */
  generation: number;
  revision: bigint;
  key: string;
  spoolMs: number;
  spoolKey: string;
}

/** What one cluster's stream needs: the poster's dependencies, its cluster named. */
export type DeliveryDeps = PosterDeps;

export { backoffMs, sinkSettings } from './batchPoster.js';

export class WebhookDelivery {
  readonly #d: DeliveryDeps;
  readonly #settings: ReturnType<typeof sinkSettings>;
  readonly #labels: { sink: string; cluster: string };
  readonly #kinds: string[];
  readonly #poster: BatchPoster;

  constructor(deps: DeliveryDeps) {
    this.#d = deps;
    this.#settings = sinkSettings(deps.sink);
    this.#labels = { sink: deps.sink.name, cluster: deps.cluster };
    this.#kinds = ruleKinds(deps.sink.rules);
    this.#poster = new BatchPoster(deps);
  }

  async #position(): Promise<{ position: Position; through: bigint; timeline: number; next?: { generation: number; enterAt: bigint } }> {
    const [row] = await this.#d.store.rows<{ generation: number | string; revision: string; key: string; spool_ms: string | number; spool_key: string }>(
      POSITION.text,
      { sink: this.#d.sink.name, cluster: this.#d.cluster },
    );
    const timelines = await this.#d.store.rows<{ generation: number | string; timeline: number | string; diverged_after: string; previous_checkpoint: string }>(
      TIMELINES.text,
      { cluster: this.#d.cluster },
    );
    const current = Math.max(0, ...timelines.map((t) => Number(t.generation)));
    const generation = Math.min(Number(row?.generation ?? 0), current);
    const position: Position = {
      generation,
      revision: BigInt(row?.revision ?? 0),
      key: row?.key ?? '',
      spoolMs: Number(row?.spool_ms ?? 0),
      spoolKey: row?.spool_key ?? '',
    };
    const mine = timelines.find((t) => Number(t.generation) === generation);
    const timeline = mine ? Number(mine.timeline) : 0;
    if (generation === current) {
      const checkpoints = await this.#d.store.rows<{ cluster: string; revision: string }>(CHECKPOINTS.text, {});
      return { position, through: BigInt(checkpoints.find((c) => c.cluster === this.#d.cluster)?.revision ?? 0), timeline };
    }
    // An ended timeline: read as far as its capture went, then enter the next where both last agree.
    const next = timelines.find((t) => Number(t.generation) === generation + 1);
    return {
      position,
      through: BigInt(next?.previous_checkpoint ?? 0),
      timeline,
      next: { generation: generation + 1, enterAt: BigInt(next?.diverged_after ?? 0) },
    };
  }

  #lastSavedMs = 0;

  async #save(p: Position): Promise<void> {
    // updated_at is the ReplacingMergeTree version: strictly increasing, so two saves within one millisecond still order.
    this.#lastSavedMs = Math.max(Date.now(), this.#lastSavedMs + 1);
    await this.#d.store.insert('alert_checkpoints', [
      {
        sink: this.#d.sink.name,
        cluster: this.#d.cluster,
        generation: p.generation,
        revision: p.revision.toString(),
        key: p.key,
        spool_ms: p.spoolMs,
        spool_key: p.spoolKey,
        updated_at: this.#lastSavedMs,
      },
    ]);
  }

  /** One pass: deliver up to one batch of the log and one of unprotected grants. Returns true when there may be more. */
  async step(signal: AbortSignal): Promise<boolean> {
    const { position, through, timeline, next: nextTimeline } = await this.#position();
    this.#d.metrics.lagRevisions.set(this.#labels, Number(through > position.revision ? through - position.revision : 0n));
    const limit = this.#settings.batchSize;
    const purposes = new Map(
      (await this.#d.store.rows<{ name: string; purpose: string }>(PURPOSES.text, { cluster: this.#d.cluster, classPrefix: PREFIX.class })).map((r) => [
        r.name,
        r.purpose,
      ]),
    );
    const purposeOf = (c: string) => purposes.get(c);
    let more = false;

    if (position.revision < through || (position.revision === through && position.key !== AFTER_ALL_KEYS)) {
      const rows = await this.#d.store.rows<LogRow>(EVENTS.text, {
        cluster: this.#d.cluster,
        timeline,
        generation: position.generation,
        afterRevision: position.revision.toString(),
        afterKey: position.key,
        throughRevision: through.toString(),
        kinds: logKinds(this.#d.sink.rules),
        limit,
      });
      const events = rows.map((r) => fromLogRow(this.#d.cluster, r));
      const next: Position = { ...position };
      if (rows.length < limit) {
        next.revision = through; // everything durable up to the checkpoint has been read
        next.key = AFTER_ALL_KEYS;
        more = nextTimeline !== undefined; // an ended timeline read to its end: the next one is waiting
      } else {
        const last = rows[rows.length - 1] as LogRow;
        next.revision = BigInt(last.revision);
        next.key = last.key;
        more = true;
      }
      if (
        !(await this.#poster.deliver(
          events.filter((e) => matches(this.#d.sink.rules, e, purposeOf)),
          signal,
        ))
      )
        return false;
      await this.#save(next);
      this.#d.metrics.lagRevisions.set(this.#labels, Number(through - next.revision));
      position.revision = next.revision;
      position.key = next.key;
    } else if (nextTimeline) {
      // Every event of an ended timeline is delivered: enter the next one after the last revision both share.
      const entered: Position = { ...position, generation: nextTimeline.generation, revision: nextTimeline.enterAt, key: AFTER_ALL_KEYS };
      await this.#save(entered);
      Object.assign(position, entered);
      more = true;
    }

    if (this.#kinds.includes('unprotected-grant')) {
      const rows = await this.#d.store.rows<SpoolRow>(UNPROTECTED.text, {
        cluster: this.#d.cluster,
        afterMs: position.spoolMs,
        afterKey: position.spoolKey,
        limit,
      });
      if (rows.length > 0) {
        const events = rows.map((r) => fromSpoolRow(this.#d.cluster, r));
        if (
          !(await this.#poster.deliver(
            events.filter((e) => matches(this.#d.sink.rules, e, purposeOf)),
            signal,
          ))
        )
          return false;
        const last = rows[rows.length - 1] as SpoolRow;
        await this.#save({ ...position, spoolMs: Number(last.ingested_ms), spoolKey: last.key });
        more ||= rows.length === limit;
      }
    }
    return more;
  }

  /** Runs until `signal` aborts; a store error is logged and retried after the poll interval. */
  run(signal: AbortSignal): Promise<void> {
    return runPasses(
      (sig) => this.step(sig),
      this.#settings.pollIntervalMs,
      signal,
      (err) => this.#d.log.warn({ sink: this.#d.sink.name, cluster: this.#d.cluster, err: err.message }, 'alert sink pass failed; retrying'),
    );
  }
}
