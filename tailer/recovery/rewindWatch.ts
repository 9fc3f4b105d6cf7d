// The rewind watcher (issue 23: recovery as a pure decision, each piece in a
// module of its own): while a run follows etcd, a restore that leaves etcd's
// head below what was captured — or changes its cluster id — would leave the
// watch waiting at a future revision forever. Each interval it reads etcd's
// position and, when `rewoundBy` says so, tells the run to stop so the start
// decision (startDecision.ts) runs again. A restore whose head is already
// past the checkpoint is found before a watch reopens (replica.ts).
import type { Etcd3 } from 'etcd3';
import { etcdPosition, type EtcdPosition } from './restores.js';

/** Why etcd's position now contradicts what was captured: another cluster id, or a head below the captured revision; else undefined. */
export function rewoundBy(now: EtcdPosition, clusterId: string, captured: bigint): string | undefined {
  if (now.clusterId !== clusterId) return `cluster id ${clusterId} → ${now.clusterId}`;
  if (now.head < captured) return `head ${now.head} below the captured revision ${captured}`;
  return undefined;
}

export interface RewindWatchOptions {
  client: Etcd3;
  /** The timeline's cluster id. */
  clusterId: string;
  /** The highest revision captured so far (the run's watermark). */
  captured: () => bigint;
  intervalMs: number;
  /** Called once, with the reason. */
  onRewound: (why: string) => void;
}

/** Starts watching; returns the stop function. An etcd that does not answer is left to the watch's own errors. */
export function watchRewind(options: RewindWatchOptions): () => void {
  let told = false;
  const timer = setInterval(() => {
    etcdPosition(options.client)
      .then((now) => {
        const why = rewoundBy(now, options.clusterId, options.captured());
        if (why && !told) {
          told = true;
          options.onRewound(why);
        }
      })
      .catch(() => undefined);
  }, options.intervalMs);
  return () => clearInterval(timer);
}
