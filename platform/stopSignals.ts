// SIGINT and SIGTERM caught from the first moment a role process starts. Caught only once every role had
// started (as before), a stop asked for while a role was still starting — a slow start on a loaded machine,
// `lockaudit start` stopped early — ended the process by the signal's default action: no role closed, and
// the supervisor counted it as not stopped cleanly ("worker (SIGTERM)").

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * What a process started by `lockaudit start` sends its supervisor once SIGTERM stops it cleanly: before that
 * (its first moments, still loading), the signal would end it outright, so the supervisor holds a stop until then.
 */
export const LISTENING = { type: 'lockaudit-listening' } as const;

export interface StopSignals {
  /** The first stop signal received, if one was. */
  readonly received: string | undefined;
  /** The next signal not yet taken: one received already resolves at once. */
  next(): Promise<string>;
  /** Resolves with `step`'s value, or with undefined as soon as a stop signal is (or was) received. */
  unlessStopped<T>(step: Promise<T>): Promise<T | undefined>;
}

export function catchStopSignals(): StopSignals {
  const queued: string[] = [];
  const waiting: ((signal: string) => void)[] = [];
  let first: string | undefined;
  const arrived: Promise<void> = new Promise((resolve) => {
    const on = (signal: string): void => {
      first ??= signal;
      resolve();
      const taker = waiting.shift();
      if (taker) taker(signal);
      else queued.push(signal);
    };
    // For the life of the process: a second signal during the shutdown is how an operator says "now".
    for (const s of SIGNALS) process.on(s, on);
  });
  if (process.send && process.connected) process.send(LISTENING, undefined, {}, () => undefined);
  return {
    get received() {
      return first;
    },
    next: () => {
      const signal = queued.shift();
      return signal !== undefined ? Promise.resolve(signal) : new Promise((resolve) => waiting.push(resolve));
    },
    unlessStopped: <T>(step: Promise<T>) => Promise.race([step, arrived.then(() => undefined)]),
  };
}
