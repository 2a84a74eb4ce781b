import type { Store } from '../../src/store/store.js';

type AsyncMethod = { [K in keyof Store]-?: Store[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof Store];

/** Runs around one call: `proceed` makes the real call; the result is what the caller gets. */
export type Around = (proceed: () => Promise<unknown>, args: unknown[]) => Promise<unknown>;

/**
 * A real store whose named methods run through `around`: to make reads fail on purpose (faults
 * injected where the real fault cannot be produced on demand) or to let another process write at
 * an exact moment. Every other method is the store's own.
 */
export function interceptedStore(store: Store, around: Partial<Record<AsyncMethod, Around>>): Store {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      const hook = around[name as AsyncMethod];
      if (hook === undefined) return value.bind(target);
      return (...args: unknown[]) => hook(() => value.apply(target, args) as Promise<unknown>, args);
    },
  });
}

/**
 * Makes calls fail while `failing` is above zero (each failure counts it down; Infinity fails until
 * `recover()`), and tells who waits when a failure happened.
 */
export class InjectedFaults {
  failing = 0;
  failures = 0;
  private readonly waiting: Array<{ count: number; resolve: () => void }> = [];

  readonly around: Around = async (proceed) => {
    if (this.failing <= 0) return proceed();
    this.failing--;
    this.failures++;
    for (const waiter of this.waiting.filter((waiter) => this.failures >= waiter.count)) {
      this.waiting.splice(this.waiting.indexOf(waiter), 1);
      waiter.resolve();
    }
    throw new Error('injected store fault');
  };

  recover(): void {
    this.failing = 0;
  }

  /** Resolves once `count` calls in all have failed. */
  failed(count: number): Promise<void> {
    if (this.failures >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push({ count, resolve }));
  }
}
