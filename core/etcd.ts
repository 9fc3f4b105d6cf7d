// etcd clients, one per configured cluster. Callers own and close them.
import { Etcd3 } from 'etcd3';
import type { EtcdCluster } from './config.js';

export interface EtcdClientOptions {
  /** Per-call deadline; etcd3's default is none, which hangs on quorum loss. */
  callTimeoutMs?: number;
}

export function createEtcdClient(cluster: EtcdCluster, options: EtcdClientOptions = {}): Etcd3 {
  return new Etcd3({
    hosts: cluster.endpoints,
    dialTimeout: 3_000,
    defaultCallOptions: () => ({ deadline: new Date(Date.now() + (options.callTimeoutMs ?? 5_000)) }),
  });
}
