import { context, propagation, trace } from '@opentelemetry/api';
import type { SpanContext } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/**
 * OpenTelemetry set up as an application does (its SDK, an AsyncLocalStorage context manager, a
 * tracer provider registered as the global one), with the SDK's in-memory exporter: every span
 * ends up in `spans()` when it ends. `stop()` unregisters all of it.
 */
export interface TestTracing {
  readonly exporter: InMemorySpanExporter;
  spans(): ReadableSpan[];
  named(name: string): ReadableSpan[];
  stop(): Promise<void>;
}

export function startTracing(): TestTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const manager = new AsyncLocalStorageContextManager();
  manager.enable();
  context.setGlobalContextManager(manager);
  trace.setGlobalTracerProvider(provider);
  return {
    exporter,
    spans: () => exporter.getFinishedSpans(),
    named: (name) => exporter.getFinishedSpans().filter((span) => span.name === name),
    async stop() {
      trace.disable();
      context.disable();
      propagation.disable();
      await provider.shutdown();
    },
  };
}

/** `traceparent` of a span, as W3C Trace Context writes it. */
export function traceparentOf(span: SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-${span.traceFlags.toString(16).padStart(2, '0')}`;
}

/** Every attribute value of every span, as text: what an exporter would send. */
export function attributeTexts(spans: readonly ReadableSpan[]): string[] {
  return spans.flatMap((span) => [...Object.values(span.attributes).map(String), span.status.message ?? '', span.name]);
}
