// Progress written beside the work, not in its way: `push` hands over the
// newest value and returns at once; one write runs at a time and a value that
// was superseded while it waited is skipped. `flush` waits for the last one.
export class LatestOnly<T> {
  readonly #write: (value: T) => Promise<void>;
  readonly #onError: (err: unknown) => void;
  #pending: { value: T } | undefined;
  #draining: Promise<void> | undefined;

  /** A failed write goes to `onError` and does not stop later ones. */
  constructor(write: (value: T) => Promise<void>, onError: (err: unknown) => void) {
    this.#write = write;
    this.#onError = onError;
  }

  push(value: T): void {
    this.#pending = { value };
    this.#draining ??= this.#drain();
  }

  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  async #drain(): Promise<void> {
    // Let the caller's synchronous code (and the assignment of #draining) finish first.
    await Promise.resolve();
    while (this.#pending) {
      const { value } = this.#pending;
      this.#pending = undefined;
      try {
        await this.#write(value);
      } catch (err) {
        this.#onError(err);
      }
    }
    this.#draining = undefined;
  }
}
