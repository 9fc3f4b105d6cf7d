// A leader election in etcd for any single-writer service (the tailer of a
// cluster, an alert sink's loop): candidates campaign under
// /sys/election/<name>/ (the keyspace's election prefix) and the elected one
// alone works. Losing the lease is reported at once (`onLost`), and
// `stillLeader()` re-checks in etcd that our campaign key exists, right
// before a fenced write: leadership fences work. `term()` is the create
// revision of our campaign key: every later leader's key is created after
// ours is gone, so its term is higher. Writers stamp it on what they store
// and the store keeps the highest term's row (sql/110): a deposed leader's
// late writes never replace its successor's.
import type { Campaign, Etcd3 } from 'etcd3';
import { PREFIX } from '../core/keyspace.js';

export class LeaderElection {
  readonly #client: Etcd3;
  readonly #name: string;
  readonly #candidateId: string;
  readonly #ttlSeconds: number;
  #campaign: Campaign | undefined;
  #key: string | undefined;
  #term: bigint | undefined;
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
    const res = await this.#client.kv.range({ key: Buffer.from(this.#key) });
    const kv = res.kvs[0];
    if (!kv) {
      this.#lost = true;
      await campaign.resign().catch(() => undefined);
      throw new Error('the campaign key was gone right after the election');
    }
    this.#term = BigInt(kv.create_revision);
  }

  /** The leadership term: our campaign key's create revision (monotonic across leaders of one etcd history). Throws before `campaign` resolved. */
  term(): bigint {
    if (this.#term === undefined) throw new Error('no term: not elected');
    return this.#term;
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
    this.#term = undefined;
    if (c) await c.resign().catch(() => undefined);
  }
}
