// Leadership per etcd cluster: replicas campaign under
// /sys/election/tailer.<cluster>/ (the keyspace's election prefix). The
// elected replica alone writes. Losing the lease is reported at once
// (`onLost`), and `stillLeader()` re-checks in etcd that our campaign key
// exists, right before each checkpoint write: leadership fences work.
import type { Campaign, Etcd3 } from 'etcd3';
import { PREFIX } from '../core/keyspace.js';

export const electionName = (cluster: string): string => `tailer.${cluster}`;

export class TailerElection {
  readonly #client: Etcd3;
  readonly #cluster: string;
  readonly #replicaId: string;
  readonly #ttlSeconds: number;
  readonly #name: string;
  #campaign: Campaign | undefined;
  #key: string | undefined;
  #lost = false;

  /** `name` defaults to the tailer's election; other single-writer services (alert sinks) pass their own. */
  constructor(client: Etcd3, cluster: string, replicaId: string, ttlSeconds: number, name: string = electionName(cluster)) {
    this.#name = name;
    this.#client = client;
    this.#cluster = cluster;
    this.#replicaId = replicaId;
    this.#ttlSeconds = ttlSeconds;
  }

  /** Campaigns; resolves once elected. `onLost` fires (once) if the lease is lost afterwards. */
  async campaign(signal: AbortSignal, onLost: (err: Error) => void): Promise<void> {
    const sys = this.#client.namespace(PREFIX.sys);
    const election = sys.election(this.#name, this.#ttlSeconds);
    const campaign = election.campaign(this.#replicaId);
    this.#campaign = campaign;
    this.#lost = false;
    let elected = false;
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        void campaign.resign().catch(() => undefined);
        reject(signal.reason instanceof Error ? signal.reason : new Error('campaign aborted'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      campaign.on('elected', () => {
        signal.removeEventListener('abort', onAbort);
        elected = true;
        resolve();
      });
      campaign.on('error', (err: Error) => {
        signal.removeEventListener('abort', onAbort);
        if (!elected) return reject(err);
        if (this.#lost) return;
        this.#lost = true;
        onLost(err);
      });
    });
    this.#key = await campaign.getCampaignKey();
  }

  /** Our campaign key still exists in etcd, so no one else can lead. */
  async stillLeader(): Promise<boolean> {
    if (this.#lost || !this.#key) return false;
    const res = await this.#client.kv.range({ key: Buffer.from(this.#key), count_only: true });
    return Number(res.count) > 0;
  }

  /** Gives up leadership (revokes the lease: a waiting replica is elected at once). */
  async resign(): Promise<void> {
    const c = this.#campaign;
    this.#campaign = undefined;
    this.#key = undefined;
    if (c) await c.resign().catch(() => undefined);
  }
}
