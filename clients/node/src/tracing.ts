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
  startSpan(name: string, options?: { kind?: number; links?: { context: SpanContextLike }[]; attributes?: Record<string, string | number | boolean> }, context?: unknown): SpanLike;
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

  /** The span active where a check is asked: the bulk it joins links it. */
  callerSpan(): SpanContextLike | undefined {
    return this.api?.trace.getSpanContext(this.api.context.active());
  }

  /** The headers that carry the active context, for a call sent in its caller's turn. */
  activeContextHeaders(): Record<string, string> {
    if (this.api === undefined) return {};
    const headers: Record<string, string> = {};
    this.api.propagation.inject(this.api.context.active(), headers);
    return headers;
  }

  /**
   * Sends a bulk of `callers`' checks (`send` given the headers to send) under a span: a child of the
   * first caller's span, linking each caller's, marked failed when the bulk fails.
   */
  async bulk<T>(callers: readonly (SpanContextLike | undefined)[], send: (headers: Record<string, string>) => Promise<T>): Promise<T> {
    const { api, tracer } = this;
    const joined = callers.filter((caller): caller is SpanContextLike => caller !== undefined);
    if (api === undefined || tracer === undefined || joined.length === 0) return send({});
    const parent = api.trace.setSpanContext(api.context.active(), joined[0]!);
    const span = tracer.startSpan('verdict check bulk', { kind: api.SpanKind.CLIENT, links: joined.map((context) => ({ context })), attributes: { 'verdict.checks': callers.length } }, parent);
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
