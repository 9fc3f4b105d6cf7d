// One worker delivers per sink: every worker runs every sink's loops, but a
// loop works only while its worker holds the sink's etcd election
// (/sys/election/alerts.<sink>.<stream>, platform/leaderElection.ts).
// Losing the lease aborts the loop at once and campaigns again; a batch in
// flight may then be delivered by the next leader too (same event ids: at
// least once), but two live workers never both stream a sink.
import type { Etcd3 } from 'etcd3';
import type { Logger } from '../../core/logger.js';
import { LeaderElection } from '../../platform/leaderElection.js';
import { sleep } from '../../platform/retry.js';

export const sinkElectionName = (sink: string, stream: string): string => `alerts.${sink}.${stream}`;

export interface LeadershipDeps {
  client: Etcd3;
  log: Logger;
  /** This worker, as its campaign value. */
  replicaId: string;
  ttlSeconds: number;
  /** Wait before campaigning again after an etcd error. */
  retryMs?: number;
}

/** Runs `loop` only while elected for `name`; until `signal` aborts. */
export async function runWhileElected(deps: LeadershipDeps, name: string, loop: (signal: AbortSignal) => Promise<void>, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    const election = new LeaderElection(deps.client, name, deps.replicaId, deps.ttlSeconds);
    const term = new AbortController();
    const stopTerm = (): void => term.abort();
    signal.addEventListener('abort', stopTerm, { once: true });
    try {
      await election.campaign(signal, (err) => {
        deps.log.warn({ election: name, err: err.message }, 'alert sink leadership lost; stopping and campaigning again');
        term.abort();
      });
      deps.log.info({ election: name, replica: deps.replicaId }, 'alert sink leadership won');
      await loop(term.signal);
    } catch (err) {
      if (!signal.aborted) {
        deps.log.warn({ election: name, err: (err as Error).message }, 'alert sink campaign failed; retrying');
        await sleep(deps.retryMs ?? 1_000, signal);
      }
    } finally {
      signal.removeEventListener('abort', stopTerm);
      await election.resign();
    }
  }
}
