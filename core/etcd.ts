// etcd clients, one per configured cluster. Callers own and close them.
import { Etcd3 } from 'etcd3';
import type { EtcdCluster } from './config.js';

export interface EtcdClientOptions {
  /** Per-call deadline; etcd3's default is none, which hangs on quorum loss. */
  callTimeoutMs?: number;
  /** Largest gRPC message accepted; one watch response can carry a whole mass expiry (default 256 MiB, gRPC's own is 4 MiB). */
  maxReceiveMessageBytes?: number;
}

export function createEtcdClient(cluster: EtcdCluster, options: EtcdClientOptions = {}): Etcd3 {
  return new Etcd3({
    hosts: cluster.endpoints,
    dialTimeout: 3_000,
    // Streams (watch, lease keep-alive) live for hours: a deadline would cut them every few seconds.
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: new Date(Date.now() + (options.callTimeoutMs ?? 5_000)) }),
    grpcOptions: { 'grpc.max_receive_message_length': options.maxReceiveMessageBytes ?? 256 * 1024 * 1024 },
  });
}
