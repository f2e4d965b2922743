/**
 * Debouncing with an injectable clock (unit tests drive a fake one).
 *
 * A `Debouncer` runs its action once the triggers have been quiet for `delayMs`, and at the
 * latest `maxWaitMs` after the first trigger of a burst (so a steady stream still gets
 * through). A `KeyedBatcher` does the same for a set of keys: the action gets each key that
 * was added during the burst, once.
 */

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};

export interface DebounceOptions {
  delayMs: number;
  /** Longest a burst can hold the action back (default: no limit). */
  maxWaitMs?: number;
  clock?: Clock;
}

export class Debouncer {
  private handle: unknown;
  private firstTrigger: number | undefined;
  private readonly clock: Clock;
  private disposed = false;

  constructor(
    private readonly action: () => void,
    private readonly options: DebounceOptions,
  ) {
    this.clock = options.clock ?? realClock;
  }

  get pending(): boolean {
    return this.handle !== undefined;
  }

  trigger(): void {
    if (this.disposed) {
      return;
    }
    const now = this.clock.now();
    this.firstTrigger ??= now;
    let wait = this.options.delayMs;
    if (this.options.maxWaitMs !== undefined) {
      wait = Math.max(0, Math.min(wait, this.firstTrigger + this.options.maxWaitMs - now));
    }
    this.clear();
    this.handle = this.clock.setTimeout(() => {
      this.fire();
    }, wait);
  }

  /** Runs a pending action now. */
  flush(): void {
    if (this.pending) {
      this.fire();
    }
  }

  /** Drops a pending action. */
  cancel(): void {
    this.clear();
    this.firstTrigger = undefined;
  }

  dispose(): void {
    this.cancel();
    this.disposed = true;
  }

  private fire(): void {
    this.clear();
    this.firstTrigger = undefined;
    this.action();
  }

  private clear(): void {
    if (this.handle !== undefined) {
      this.clock.clearTimeout(this.handle);
      this.handle = undefined;
    }
  }
}

export class KeyedBatcher<K> {
  private keys = new Set<K>();
  private readonly debouncer: Debouncer;

  constructor(action: (keys: K[]) => void, options: DebounceOptions) {
    this.debouncer = new Debouncer(() => {
      const keys = [...this.keys];
      this.keys = new Set<K>();
      action(keys);
    }, options);
  }

  add(...keys: K[]): void {
    for (const key of keys) {
      this.keys.add(key);
    }
    this.debouncer.trigger();
  }

  flush(): void {
    this.debouncer.flush();
  }

  dispose(): void {
    this.keys.clear();
    this.debouncer.dispose();
  }
}
