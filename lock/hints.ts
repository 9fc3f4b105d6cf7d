// Release hints from etcd: one watch per contended key (hold key, and the
// durable queue for durable classes), shared by its waiters, started from
// the revision after the failed grant so no release in between is missed.
// A hint is never a grant; a lost watch costs latency (waiters poll), not safety.
import type { Etcd3, Watcher } from 'etcd3';
import type { Logger } from '../core/logger.js';

interface Entry {
  refs: number;
  watchers: Promise<Watcher | undefined>[];
}

export class HintWatches {
  readonly #client: Etcd3;
  readonly #logger: Logger;
  readonly #onHint: (id: string) => void;
  readonly #entries = new Map<string, Entry>();
  #closed = false;

  constructor(client: Etcd3, logger: Logger, onHint: (id: string) => void) {
    this.#client = client;
    this.#logger = logger;
    this.#onHint = onHint;
  }

  /**
   * Hints `id` on any change of `key` (or under `prefix`) from `fromRevision` on.
   * Returns the unsubscribe function.
   */
  subscribe(id: string, targets: { key?: string; prefix?: string }, fromRevision: string): () => void {
    if (this.#closed) return () => {};
    let entry = this.#entries.get(id);
    if (!entry) {
      const start = (build: (b: ReturnType<Etcd3['watch']>) => ReturnType<Etcd3['watch']>): Promise<Watcher | undefined> =>
        build(this.#client.watch())
          .startRevision(fromRevision)
          .create()
          .then((w) => {
            w.on('data', () => this.#onHint(id));
            w.on('error', (err) => this.#logger.debug({ err: err.message }, 'hint watch failed; waiters poll'));
            return w;
          })
          .catch((err: Error) => {
            this.#logger.debug({ err: err.message }, 'hint watch not created; waiters poll');
            return undefined;
          });
      const watchers: Promise<Watcher | undefined>[] = [];
      if (targets.key) watchers.push(start((b) => b.key(targets.key as string)));
      if (targets.prefix) watchers.push(start((b) => b.prefix(targets.prefix as string)));
      entry = { refs: 0, watchers };
      this.#entries.set(id, entry);
    }
    entry.refs++;
    const held = entry;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      held.refs--;
      if (held.refs === 0 && this.#entries.get(id) === held) {
        this.#entries.delete(id);
        for (const w of held.watchers) void w.then((x) => x?.cancel()).catch(() => undefined);
      }
    };
  }

  close(): void {
    this.#closed = true;
    for (const [id, entry] of this.#entries) {
      this.#entries.delete(id);
      for (const w of entry.watchers) void w.then((x) => x?.cancel()).catch(() => undefined);
    }
  }
}
