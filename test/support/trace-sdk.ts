import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { eventually } from './eventually.js';

/**
 * The OpenTelemetry SDK for a test file, with an in-memory exporter: rastro itself depends on
 * the API only. Registered before the file's tests, reset before each.
 */
export function useTestTracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => {
    expect(trace.setGlobalTracerProvider(provider)).toBe(true);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterAll(async () => {
    trace.disable();
    context.disable();
    propagation.disable();
    await provider.shutdown();
  });
  beforeEach(() => exporter.reset());
  const spansOf = (traceId: string) => exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
  return {
    exporter,
    spansOf,
    /** The one finished span of the trace with this name (waiting for it: some end after the call returns). */
    spanNamed(traceId: string, name: string): Promise<ReadableSpan> {
      return eventually(() => {
        const found = spansOf(traceId).filter((span) => span.name === name);
        if (found.length > 1) throw new Error(`${found.length} spans named ${name}`);
        return found[0];
      }, `the span ${name} in trace ${traceId}`);
    },
  };
}

export const traceparentOf = (span: ReadableSpan) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;
export const parentId = (span: ReadableSpan) => span.parentSpanContext?.spanId;
