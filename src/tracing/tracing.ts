import type { IncomingHttpHeaders } from 'node:http';
import type { Span, Tracer } from '@opentelemetry/api';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** Spans waiting to be exported, at most: past it, an ended span is dropped and counted (an exporter down never holds memory or a decision). */
export const MAX_QUEUED_SPANS = 2048;
/** Spans sent in one export, at most, and how often the queue is sent. */
const EXPORT_BATCH = 512;
const EXPORT_EVERY_MILLIS = 1000;
/** How long a shutdown waits for the last export. */
const FLUSH_MILLIS = 2000;

export interface TracingSettings {
  /** The OTLP/HTTP traces endpoint (`.../v1/traces`). */
  endpoint: string;
  /** The share of traces started here that are sampled (0 to 1); a caller's sampled parent is followed either way. */
  sampleRatio: number;
  serviceName: string;
}

/** What an exporter down or slow has cost: spans dropped (the queue full) and exports that failed. */
export interface TracingCounts {
  dropped: number;
  failedExports: number;
}

/**
 * Spans for the requests that decide, exported over OTLP/HTTP. Ended spans wait in a bounded queue that
 * is sent every second; a full queue drops (and counts) rather than grow, and an export in flight
 * is never waited for by a request.
 */
export interface Tracing {
  /** A span for a request, the child of the trace its `traceparent` (and `tracestate`) header names, if any. */
  requestSpan(name: string, headers: IncomingHttpHeaders): Span;
  /** An ended span, the child of `parent`, with `attributes`. */
  childSpan(parent: Span, name: string, attributes: Record<string, string | number | boolean>): void;
  readonly counts: TracingCounts;
  shutdown(): Promise<void>;
}

/** A span processor that queues at most MAX_QUEUED_SPANS ended spans and sends them every second. */
class BoundedExport implements SpanProcessor {
  private queue: ReadableSpan[] = [];
  private exporting = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly exporter: SpanExporter,
    readonly counts: TracingCounts,
  ) {
    this.timer = setInterval(() => void this.send(), EXPORT_EVERY_MILLIS).unref();
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.queue.length >= MAX_QUEUED_SPANS) this.counts.dropped++;
    else this.queue.push(span);
  }

  async forceFlush(): Promise<void> {
    await this.send();
  }

  async shutdown(): Promise<void> {
    clearInterval(this.timer);
    await Promise.race([this.send(), new Promise((resolve) => setTimeout(resolve, FLUSH_MILLIS).unref())]);
    await this.exporter.shutdown();
  }

  private async send(): Promise<void> {
    if (this.exporting || this.queue.length === 0) return;
    this.exporting = true;
    const batch = this.queue.splice(0, EXPORT_BATCH);
    try {
      await new Promise<void>((resolve) =>
        this.exporter.export(batch, (result) => {
          if (result.code !== 0) this.counts.failedExports++;
          resolve();
        }),
      );
    } finally {
      this.exporting = false;
    }
  }
}

/** Starts tracing as `settings` say. Loaded only then: a start without it loads no OpenTelemetry code. */
export async function openTracing(settings: TracingSettings): Promise<Tracing> {
  const [api, core, resources, sdk, otlp] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  const counts: TracingCounts = { dropped: 0, failedExports: 0 };
  const processor = new BoundedExport(new otlp.OTLPTraceExporter({ url: settings.endpoint, timeoutMillis: 5000 }), counts);
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': settings.serviceName }),
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanProcessors: [processor],
  });
  const tracer: Tracer = provider.getTracer('verdict');
  const propagator = new core.W3CTraceContextPropagator();
  const getter = {
    keys: (headers: IncomingHttpHeaders) => Object.keys(headers),
    get: (headers: IncomingHttpHeaders, key: string) => headers[key],
  };
  return {
    requestSpan: (name, headers) => tracer.startSpan(name, { kind: api.SpanKind.SERVER }, propagator.extract(api.ROOT_CONTEXT, headers, getter)),
    childSpan: (parent, name, attributes) => tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, attributes }, api.trace.setSpan(api.ROOT_CONTEXT, parent)).end(),
    counts,
    shutdown: () => provider.shutdown(),
  };
}
