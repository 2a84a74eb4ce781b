import type { FastifyBaseLogger } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildLoggerOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;

type Log = (...args: unknown[]) => void;

/**
 * A request's logger that becomes the server logger's child (bound to the request id) when it
 * first logs. With request logging off most requests log nothing, and creating a pino child (its
 * bindings serialised) costs one to two microseconds of every request.
 */
class LazyRequestLogger {
  private created: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.created ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.created?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  // Methods on the prototype, not one closure each per request.
  fatal(...args: unknown[]): void {
    (this.logger.fatal as Log).apply(this.logger, args);
  }
  error(...args: unknown[]): void {
    (this.logger.error as Log).apply(this.logger, args);
  }
  warn(...args: unknown[]): void {
    (this.logger.warn as Log).apply(this.logger, args);
  }
  info(...args: unknown[]): void {
    (this.logger.info as Log).apply(this.logger, args);
  }
  debug(...args: unknown[]): void {
    (this.logger.debug as Log).apply(this.logger, args);
  }
  trace(...args: unknown[]): void {
    (this.logger.trace as Log).apply(this.logger, args);
  }
  silent(...args: unknown[]): void {
    (this.logger.silent as Log).apply(this.logger, args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/** Fastify's childLoggerFactory: each request's logger is created when it first logs. */
export const lazyRequestLogger = (logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger =>
  // The methods take what pino's take, passed through unchanged.
  new LazyRequestLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
