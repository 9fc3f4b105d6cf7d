// The lock engine's shared high-water source (issue 21 item 5): what a new
// process finds of the tokens other processes already issued on this
// cluster. lock/ knows only this interface; roles/ wires in the audit
// store's (tailer/sink/grantHighWater.ts).

export interface GrantHighWaterSource {
  /** The highest token (epoch × 2^48 + revision) of an API grant ever captured for `cluster`, on any etcd timeline; 0n when none. */
  highestGrantToken(cluster: string): Promise<bigint>;
}
