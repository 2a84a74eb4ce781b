/** One condition of readiness: undefined when it holds, else why not. */
export type ReadinessCondition = () => Promise<string | undefined> | string | undefined;

export interface ReadinessConditions {
  /** Without these this process cannot decide correctly: one failing makes it not ready. */
  required: Readonly<Record<string, ReadinessCondition>>;
  /** One failing leaves decisions going on (from the last snapshot): ready, but degraded. */
  degrading: Readonly<Record<string, ReadinessCondition>>;
}

export interface ReadinessReport {
  ready: boolean;
  /** Some degrading condition does not hold. */
  degraded: boolean;
  /** Every condition by name: `ok`, or why it does not hold. */
  checks: Record<string, string>;
  /** What this process chose, by name, reported beside the conditions and never failing. */
  choices?: Readonly<Record<string, string>>;
}

export const SHUTTING_DOWN = 'shutting down';

async function outcomes(conditions: Readonly<Record<string, ReadinessCondition>>): Promise<Record<string, string>> {
  const names = Object.keys(conditions);
  const results = await Promise.all(
    names.map(async (name) => {
      try {
        return (await conditions[name]!()) ?? 'ok';
      } catch (error) {
        return (error as Error).message;
      }
    }),
  );
  return Object.fromEntries(names.map((name, index) => [name, results[index]!]));
}

const allHold = (checks: Record<string, string>) => Object.values(checks).every((outcome) => outcome === 'ok');

/**
 * Whether this process should receive traffic: every required condition holds and no shutdown has
 * begun. A shutdown flips it for good, before the listeners close, so load balancers stop sending first.
 */
export class Readiness {
  private shuttingDown = false;

  constructor(
    private readonly conditions: ReadinessConditions,
    /** What this process chose, read at each report: some choices are revised while serving. */
    private readonly choices?: () => Readonly<Record<string, string>>,
  ) {}

  beginShutdown(): void {
    this.shuttingDown = true;
  }

  async report(): Promise<ReadinessReport> {
    const [required, degrading] = await Promise.all([outcomes(this.conditions.required), outcomes(this.conditions.degrading)]);
    const checks = { ...required, ...degrading };
    if (this.shuttingDown) checks.shutdown = SHUTTING_DOWN;
    const report = { ready: allHold(required) && !this.shuttingDown, degraded: !allHold(degrading), checks };
    return this.choices === undefined ? report : { ...report, choices: this.choices() };
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
