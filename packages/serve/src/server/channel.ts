// A single-consumer async queue: the scheduler pushes a job's events as tokens are sampled, and the HTTP
// handler consumes them with `for await`, whether it streams them out or collects a whole response.

/** An unbounded async queue closed once; iterating it yields every pushed value, then ends. */
export class Channel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private wake: (() => void) | null = null;
  private closed = false;

  /** Appends a value (ignored after close). */
  push(value: T): void {
    if (this.closed) return;
    this.items.push(value);
    this.notify();
  }

  /** Ends the iteration after the values already pushed. */
  close(): void {
    this.closed = true;
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** Yields the pushed values in order, waiting for more until closed. */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.items.length > 0) {
        yield this.items.shift()!;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}
