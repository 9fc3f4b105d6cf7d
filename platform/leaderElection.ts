// A leader election in etcd for any single-writer service (the tailer of a
// cluster, an alert sink's loop): candidates campaign under
// /sys/election/<name>/ (the keyspace's election prefix) and the elected one
// alone works. Losing the lease is reported at once (`onLost`), and
// `stillLeader()` re-checks in etcd that our campaign key exists, right
// before a fenced write: leadership fences work.
import type { Campaign, Etcd3 } from 'etcd3';
import { PREFIX } from '../core/keyspace.js';

export class LeaderElection {
  readonly #client: Etcd3;
  readonly #name: string;
  readonly #candidateId: string;
  readonly #ttlSeconds: number;
  #campaign: Campaign | undefined;
  #key: string | undefined;
  #lost = false;

  /** `name`: the election (e.g. tailerElectionName(cluster)); `candidateId`: this candidate, as its campaign value. */
  constructor(client: Etcd3, name: string, candidateId: string, ttlSeconds: number) {
    this.#client = client;
    this.#name = name;
    this.#candidateId = candidateId;
    this.#ttlSeconds = ttlSeconds;
  }

  /** Campaigns; resolves once elected. `onLost` fires (once) if the lease is lost afterwards. */
  async campaign(signal: AbortSignal, onLost: (err: Error) => void): Promise<void> {
    const sys = this.#client.namespace(PREFIX.sys);
    const election = sys.election(this.#name, this.#ttlSeconds);
    const campaign = election.campaign(this.#candidateId);
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

  /** Gives up leadership (revokes the lease: a waiting candidate is elected at once). */
  async resign(): Promise<void> {
    const c = this.#campaign;
    this.#campaign = undefined;
    this.#key = undefined;
    if (c) await c.resign().catch(() => undefined);
  }
}
