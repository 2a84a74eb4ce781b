/** What a span is known by across processes (OpenTelemetry's SpanContext, as much as the client reads). */
export interface SpanContextLike {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

/** A span the client starts (OpenTelemetry's Span, as much as the client uses). */
export interface SpanLike {
  spanContext(): SpanContextLike;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

/** OpenTelemetry's Tracer, as much as the client uses. */
export interface TracerLike {
  startSpan(
    name: string,
    options?: { kind?: number; links?: { context: SpanContextLike; attributes?: Record<string, string> }[]; attributes?: Record<string, string | number | boolean> },
    context?: unknown,
  ): SpanLike;
}

/**
 * The part of OpenTelemetry's API the client uses: give it the `@opentelemetry/api` module your app
 * traces with (`import * as opentelemetry from '@opentelemetry/api'`), so that its spans and the
 * context it sends join your traces through your SDK. The client itself depends on no OpenTelemetry package.
 */
export interface OpenTelemetryApi {
  context: { active(): unknown };
  trace: {
    getTracer(name: string, version?: string): TracerLike;
    getSpanContext(context: unknown): SpanContextLike | undefined;
    setSpanContext(context: unknown, spanContext: SpanContextLike): unknown;
    setSpan(context: unknown, span: SpanLike): unknown;
  };
  propagation: { inject(context: unknown, carrier: Record<string, string>): void };
  SpanKind: { CLIENT: number };
  SpanStatusCode: { ERROR: number };
}

const TRACER_NAME = '@verdict-authz/client';

/** Who asked for a check, for the span that sends it: the caller's span, and the app's route when a guard asked. */
export interface Caller {
  span: SpanContextLike | undefined;
  route: string | undefined;
}

/**
 * How the client's calls join the caller's trace (nothing at all without an API): a call made in the
 * caller's turn carries the active context (`traceparent`); checks batched into one bulk are sent
 * under a span of their own, the child of the first caller's span, linking every caller's.
 */
export class CallTracing {
  private readonly tracer: TracerLike | undefined;

  constructor(private readonly api: OpenTelemetryApi | undefined) {
    this.tracer = api?.trace.getTracer(TRACER_NAME);
  }

  /** Who asks for a check, now: the span active here (the bulk it joins links it), and the app's route when a guard asks. */
  caller(route: string | undefined): Caller {
    return { span: this.api?.trace.getSpanContext(this.api.context.active()), route };
  }

  /** The headers that carry the active context, for a call sent in its caller's turn. */
  activeContextHeaders(): Record<string, string> {
    if (this.api === undefined) return {};
    const headers: Record<string, string> = {};
    this.api.propagation.inject(this.api.context.active(), headers);
    return headers;
  }

  /**
   * Sends `callers`' checks (`send` given the headers to send) under a span: a child of the first
   * caller's span, linking each caller's (with the route that asked, when a guard did), marked failed
   * when the call fails. One check alone is `verdict check`, named by its route; several, `verdict check bulk`.
   */
  async bulk<T>(callers: readonly Caller[], send: (headers: Record<string, string>) => Promise<T>): Promise<T> {
    const { api, tracer } = this;
    const joined = callers.filter((caller): caller is Caller & { span: SpanContextLike } => caller.span !== undefined);
    if (api === undefined || tracer === undefined || joined.length === 0) return send({});
    const parent = api.trace.setSpanContext(api.context.active(), joined[0]!.span);
    const alone = callers.length === 1 ? callers[0] : undefined;
    const links = joined.map(({ span, route }) => ({ context: span, ...(route !== undefined && { attributes: { 'http.route': route } }) }));
    const attributes = { 'verdict.checks': callers.length, ...(alone?.route !== undefined && { 'http.route': alone.route }) };
    const span = tracer.startSpan(alone === undefined ? 'verdict check bulk' : 'verdict check', { kind: api.SpanKind.CLIENT, links, attributes }, parent);
    const headers: Record<string, string> = {};
    api.propagation.inject(api.trace.setSpan(parent, span), headers);
    try {
      return await send(headers);
    } catch (error) {
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  }
}
