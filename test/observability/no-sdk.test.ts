import { context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { consumeIntoStore } from '../../packages/rastro/src/inbox/consume-into-store.js';
import { extractTraceContext, formatTraceparent, injectTraceContext, parseTraceparent } from '../../packages/rastro/src/observability/trace-context.js';
import { withAcquirerSpan, withSpan } from '../../packages/rastro/src/observability/tracing.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { runRelay } from '../../packages/rastro/src/outbox/relay.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { testApp } from '../support/app.js';
import { backends, freshSchema } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { memoryConsumer } from '../support/memory-consumer.js';

// No SDK, no context manager, no propagator: what an application that never set up tracing runs.
beforeAll(() => {
  trace.disable();
  context.disable();
  propagation.disable();
});

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('the W3C trace context format', () => {
  it('reads and writes traceparent and tracestate as the SDK’s own propagator does', () => {
    const w3c = new W3CTraceContextPropagator();
    const carrier = { traceparent: TRACEPARENT, tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE' };
    const ours = extractTraceContext(carrier);
    const theirs = w3c.extract(ROOT_CONTEXT, carrier, { get: (c, key) => c[key as keyof typeof c], keys: (c) => Object.keys(c) });
    const fromOurs: Record<string, string> = {};
    w3c.inject(ours, fromOurs, { set: (c, key, value) => void (c[key] = value) });
    expect(injectTraceContext({}, theirs)).toEqual(fromOurs);
    expect(fromOurs).toEqual(carrier);
  });

  it('refuses what the specification calls invalid, and reads a later version’s fields', () => {
    const invalid = [
      'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      '00-00000000000000000000000000000000-b7ad6b7169203331-01',
      '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
      '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01',
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra',
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331',
      'not a traceparent',
      '',
    ];
    for (const value of invalid) expect(parseTraceparent(value), value).toBeUndefined();
    expect(parseTraceparent(42)).toBeUndefined();
    const later = parseTraceparent('01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes-next');
    expect(later && formatTraceparent(later)).toBe(TRACEPARENT);
    expect(extractTraceContext({ traceparent: 'nope' })).toBe(ROOT_CONTEXT);
  });
});

describe.each(backends())('without an OpenTelemetry SDK on $name', (backend) => {
  it('runs spans as no-ops: results and errors pass through, and no trace context is invented', async () => {
    expect(await withSpan('work', {}, (span) => (span.isRecording() ? 'recording' : 'no-op'))).toBe('no-op');
    await expect(withSpan('work', {}, () => Promise.reject(new Error('failed')))).rejects.toThrow('failed');
    expect(await withAcquirerSpan('capture', {}, (headers) => headers)).toEqual({});
    // An incoming trace context is handed on unchanged, not replaced by a made-up span.
    const parent = extractTraceContext({ traceparent: TRACEPARENT });
    expect(await withSpan('work', {}, (_span, ctx) => injectTraceContext({}, ctx), { parent })).toEqual({ traceparent: TRACEPARENT });
  });

  it('stores no traceparent for a request that sent one, and relays a recorded one unchanged', async () => {
    const t = await testApp(backend);
    const accountId = await t.openAccount();
    const res = await t.post(`/accounts/${accountId}/deposit`, { amount: 5 }, { traceparent: TRACEPARENT });
    expect(res.statusCode).toBe(201);
    const events = await t.store.readStream(`account-${accountId}`);
    expect(events.map((event) => event.metadata.traceparent)).toEqual([undefined, undefined]);
    await t.app.close();

    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const outbox = createOutbox(db, { schema });
    await store.append('order-1', [{ type: 'order.paid', data: { orderId: '1' }, metadata: { traceparent: TRACEPARENT } }]);
    const processor = defineProcessor({
      name: 'writer',
      handlers: { 'order.paid': async (event, ctx) => void (await outbox.write(ctx.tx, { aggregateType: 'order', aggregateId: event.streamId, type: 'Noted', payload: {} })) },
    });
    await runLiveRound(processor, { store, policy: {} });
    await db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId: 'order-2', type: 'Traced', payload: {}, traceparent: TRACEPARENT }));
    const { rows } = await db.query<{ type: string; traceparent: string | null }>(`select type, traceparent from ${quoteSchema(schema)}.outbox order by position`);
    expect(rows).toEqual([{ type: 'Noted', traceparent: null }, { type: 'Traced', traceparent: TRACEPARENT }]);

    const publisher = createMemoryPublisher();
    const inbox = consumeIntoStore({ store, consumer: memoryConsumer(publisher), streamOf: (message) => `inbox-${message.aggregateId}` });
    const relay = await runRelay({ store, publisher, pollIntervalMs: 50 });
    await eventually(() => inbox.counts.stored === 2, 'both messages in the inbox');
    await relay.stop();
    await inbox.stop();
    expect(publisher.published.map((message) => message.traceparent)).toEqual([null, TRACEPARENT]);
    expect((await store.readStream('inbox-order-1'))[0]!.metadata.traceparent).toBeUndefined();
    expect((await store.readStream('inbox-order-2'))[0]!.metadata.traceparent).toBe(TRACEPARENT);
  });
});
