// Whether etcd has a reachable quorum, as this API sees it. A call that
// fails for want of a leader or times out marks the quorum lost; while lost,
// a probe (a linearizable read, which needs a quorum) runs until one answers.
// Closed classes are then refused at once instead of each waiting out a deadline.
import { EtcdLeaseInvalidError, GRPCCancelledError, GRPCDeadlineExceededError, GRPCGenericError, GRPCUnavailableError } from 'etcd3';

/** True for failures that mean "no quorum / unreachable", not "your request is wrong". */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof EtcdLeaseInvalidError) return false;
  if (err instanceof GRPCDeadlineExceededError || err instanceof GRPCUnavailableError || err instanceof GRPCCancelledError) return true;
  // A stream's own error (a keepalive's bidi call) comes from grpc-js unwrapped: CANCELLED when etcd3 closed the
  // channel of a member it lost, DEADLINE_EXCEEDED, UNAVAILABLE (a chaos run's keepalives answered 500 on it).
  const code = (err as { code?: unknown } | null)?.code;
  if (err instanceof Error && (code === 1 || code === 4 || code === 14) && /^(1 CANCELLED|4 DEADLINE_EXCEEDED|14 UNAVAILABLE)/.test(err.message)) return true;
  // etcd3's per-host circuit breaker (cockatiel) refuses calls to members it saw failing.
  if (typeof err === 'object' && err !== null && (err as { isBrokenCircuitError?: boolean }).isBrokenCircuitError === true) return true;
  const message = err instanceof Error ? err.message : String(err);
  if (/no leader|leader changed|timed out|deadline|unavailable|connect|ECONNREFUSED|not capable|circuit breaker/i.test(message)) return true;
  return err instanceof GRPCGenericError && !/lease not found|invalid argument|too many operations/i.test(message);
}

export interface QuorumOptions {
  /** A call that needs a quorum; resolves when one answered. */
  probe: () => Promise<void>;
  probeIntervalMs?: number;
  onChange?: (lost: boolean) => void;
}

export class QuorumMonitor {
  readonly #probe: () => Promise<void>;
  readonly #intervalMs: number;
  readonly #onChange: (lost: boolean) => void;
  #lost = false;
  #since = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: QuorumOptions) {
    this.#probe = options.probe;
    this.#intervalMs = options.probeIntervalMs ?? 1_000;
    this.#onChange = options.onChange ?? (() => {});
  }

  get lost(): boolean {
    return this.#lost;
  }

  /** When the quorum was lost (ms), 0 while it is there. */
  get lostSince(): number {
    return this.#lost ? this.#since : 0;
  }

  /** Reports a failed call; returns whether it was a quorum failure. */
  failure(err: unknown): boolean {
    if (!isUnavailable(err)) return false;
    if (!this.#lost && !this.#closed) {
      this.#lost = true;
      this.#since = Date.now();
      this.#onChange(true);
      this.#schedule();
    }
    return true;
  }

  success(): void {
    if (!this.#lost) return;
    this.#lost = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#onChange(false);
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#probe().then(
        () => this.success(),
        () => {
          if (this.#lost) this.#schedule();
        },
      );
    }, this.#intervalMs);
    this.#timer.unref();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}
