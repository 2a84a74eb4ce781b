/** One condition of readiness: undefined when it holds, else why not. */
export type ReadinessCondition = () => Promise<string | undefined> | string | undefined;

export interface ReadinessReport {
  ready: boolean;
  /** Every condition by name: `ok`, or why it does not hold. */
  checks: Record<string, string>;
}

export const SHUTTING_DOWN = 'shutting down';

/**
 * Whether this process should receive traffic: all its conditions hold and no shutdown has begun.
 * A shutdown flips it for good, before the listeners close, so load balancers stop sending first.
 */
export class Readiness {
  private shuttingDown = false;

  constructor(private readonly conditions: Readonly<Record<string, ReadinessCondition>>) {}

  beginShutdown(): void {
    this.shuttingDown = true;
  }

  async report(): Promise<ReadinessReport> {
    const names = Object.keys(this.conditions);
    const outcomes = await Promise.all(
      names.map(async (name) => {
        try {
          return (await this.conditions[name]!()) ?? 'ok';
        } catch (error) {
          return (error as Error).message;
        }
      }),
    );
    const checks: Record<string, string> = Object.fromEntries(names.map((name, index) => [name, outcomes[index]!]));
    if (this.shuttingDown) checks.shutdown = SHUTTING_DOWN;
    return { ready: Object.values(checks).every((outcome) => outcome === 'ok'), checks };
  }
}

/** Rejects with `message` when `promise` has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
