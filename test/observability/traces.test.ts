import { randomBytes } from 'node:crypto';
import { propagation, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { wireHeaders } from '../../packages/rastro/src/brokers/message.js';
import { createNatsConsumer } from '../../packages/rastro/src/brokers/nats-consumer.js';
import { createNatsPublisher } from '../../packages/rastro/src/brokers/nats.js';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { consumeIntoStore, type Inbox } from '../../packages/rastro/src/inbox/consume-into-store.js';
import { withSpan } from '../../packages/rastro/src/observability/tracing.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { runRelay, type Relay } from '../../packages/rastro/src/outbox/relay.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import type { RecordedEvent } from '../../packages/rastro/src/store/event.js';
import { testApp } from '../support/app.js';
import { NATS_URL } from '../support/brokers.js';
import { backends, freshSchema, type Backend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { memoryConsumer } from '../support/memory-consumer.js';
import { parentId, traceparentOf, useTestTracing } from '../support/trace-sdk.js';

const { spansOf, spanNamed } = useTestTracing();

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
function track<T extends Relay | Inbox>(thing: T): T {
  cleanups.push(() => thing.stop());
  return thing;
}

/** A caller's trace context, as a client would send it. */
function callerTrace() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

async function storeOn(backend: Backend): Promise<EventStore> {
  const { db, schema } = await freshSchema(backend);
  return createEventStore(db, { schema });
}

/** A processor whose handler calls an effect and writes an outbox message in the batch's transaction. */
function notifyingProcessor(store: EventStore, seen: { effectSpan?: string; handlerSpan?: string }) {
  const outbox = createOutbox(store.db, { schema: store.schema });
  return defineProcessor({
    name: 'notifier',
    handlers: {
      'order.paid': async (event, ctx) => {
        seen.handlerSpan = trace.getActiveSpan()?.spanContext().spanId;
        await ctx.effect('notify-seller', async () => {
          seen.effectSpan = trace.getActiveSpan()?.spanContext().spanId;
          return { sent: true };
        });
        await outbox.write(ctx.tx, { aggregateType: 'order', aggregateId: event.streamId, type: 'SellerNotified', payload: { orderId: event.data.orderId } });
      },
    },
  });
}
const policy = { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } as const;

async function outboxTraceparents(store: EventStore): Promise<(string | null)[]> {
  const { rows } = await store.db.query<{ traceparent: string | null }>(`select traceparent from ${quoteSchema(store.schema)}.outbox order by position`);
  return rows.map((row) => row.traceparent);
}

describe.each(backends())('traces on $name', (backend) => {
  it('makes an HTTP deposit with a traceparent a server span of that trace, with its append span and events inside it', async () => {
    const t = await testApp(backend);
    const accountId = await t.openAccount();
    const caller = callerTrace();
    const res = await t.post(`/accounts/${accountId}/deposit`, { amount: 500 }, { traceparent: caller.traceparent });
    expect(res.statusCode).toBe(201);

    const server = await spanNamed(caller.traceId, 'HTTP POST /accounts/:id/deposit');
    expect(server.kind).toBe(SpanKind.SERVER);
    expect(parentId(server)).toBe(caller.spanId);
    expect(server.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/accounts/:id/deposit', 'http.response.status_code': 201 });
    const append = await spanNamed(caller.traceId, 'rastro.append');
    expect(parentId(append)).toBe(server.spanContext().spanId);
    expect(append.attributes).toMatchObject({ 'rastro.stream.id': `account-${accountId}`, 'rastro.event.count': 1, 'rastro.event.types': ['AccountDeposited'], 'rastro.stream.version': 2 });

    const [opened, deposited] = await t.store.readStream(`account-${accountId}`);
    expect(deposited!.metadata.traceparent).toBe(traceparentOf(append));
    // The account was opened with no traceparent: its request started a trace of its own.
    expect(opened!.metadata.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(opened!.metadata.traceparent!.split('-')[1]).not.toBe(caller.traceId);
    await t.app.close();
  });

  it('keeps a webhook redelivered under another trace one snapshot, in the first trace, and normalizes it there', async () => {
    const t = await testApp(backend);
    const webhook = { orderId: '260074525', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z' };
    const first = callerTrace();
    const second = callerTrace();
    const a = await t.post('/intake/pied/orders', webhook, { traceparent: first.traceparent });
    const b = await t.post('/intake/pied/orders', webhook, { traceparent: second.traceparent });
    expect([a.statusCode, b.statusCode]).toEqual([202, 202]);
    expect(b.json().eventId).toBe(a.json().eventId);
    expect(await t.eventCount()).toBe(1);
    const append = await spanNamed(first.traceId, 'rastro.append');
    expect(parentId(append)).toBe((await spanNamed(first.traceId, 'HTTP POST /intake/:source/orders')).spanContext().spanId);
    const [snapshot] = await t.store.readStream('order:pied:260074525');
    expect(snapshot!.metadata.traceparent).toBe(traceparentOf(append));

    await t.orders.normalizeRound();
    const handle = spansOf(first.traceId).find((span) => span.name.startsWith('rastro.handle '));
    expect(handle && parentId(handle)).toBe(append.spanContext().spanId);
    expect(handle!.attributes['rastro.stream.id']).toBe('order:pied:260074525');
    await t.app.close();
  });

  it('ends a request span that failed as a client error without marking the server failed', async () => {
    const t = await testApp(backend);
    const caller = callerTrace();
    const res = await t.post('/accounts/nobody/deposit', { amount: 0 }, { traceparent: caller.traceparent });
    expect(res.statusCode).toBe(422);
    const server = await spanNamed(caller.traceId, 'HTTP POST /accounts/:id/deposit');
    expect(server.attributes['http.response.status_code']).toBe(422);
    expect(server.status.code).toBe(0);
    expect(spansOf(caller.traceId).map((span) => span.name)).toEqual(['HTTP POST /accounts/:id/deposit']);
    await t.app.close();
  });

  it('follows a charge from its event through the handler, the effect, the outbox, the relay and the inbox', async () => {
    const store = await storeOn(backend);
    const caller = callerTrace();
    await store.append('order-1', [{ type: 'order.paid', data: { orderId: '1' }, metadata: { traceparent: caller.traceparent } }]);
    const seen: { effectSpan?: string; handlerSpan?: string } = {};
    await runLiveRound(notifyingProcessor(store, seen), { store, policy });

    const handle = await spanNamed(caller.traceId, 'rastro.handle order.paid');
    expect(parentId(handle)).toBe(caller.spanId);
    expect(handle.attributes).toMatchObject({ 'rastro.processor': 'notifier', 'rastro.event.type': 'order.paid', 'rastro.stream.id': 'order-1', 'rastro.stream.version': 1, 'rastro.run.mode': 'live' });
    expect(seen.handlerSpan).toBe(handle.spanContext().spanId);
    const effect = await spanNamed(caller.traceId, 'rastro.effect notify-seller');
    expect(parentId(effect)).toBe(handle.spanContext().spanId);
    expect(effect.attributes['rastro.effect.key']).toMatch(/:notify-seller$/);
    expect(seen.effectSpan).toBe(effect.spanContext().spanId);
    // Written from the handler: the message carries the handler's trace context.
    expect(await outboxTraceparents(store)).toEqual([traceparentOf(handle)]);

    const publisher = createMemoryPublisher();
    const consumer = memoryConsumer(publisher);
    const inbox = track(consumeIntoStore({ store, consumer, streamOf: (message) => `inbox-${message.aggregateId}` }));
    track(await runRelay({ store, publisher, pollIntervalMs: 50 }));
    const publish = await spanNamed(caller.traceId, 'rastro.relay.publish');
    expect(publish.kind).toBe(SpanKind.PRODUCER);
    expect(parentId(publish)).toBe(handle.spanContext().spanId);
    expect(publish.attributes).toMatchObject({ 'messaging.system': 'memory', 'rastro.message.type': 'SellerNotified', 'rastro.aggregate.id': 'order-1' });
    const [message] = publisher.published;
    expect(message!.traceparent).toBe(traceparentOf(publish));
    expect(wireHeaders(message!).traceparent).toBe(traceparentOf(publish));

    const consume = await spanNamed(caller.traceId, 'rastro.inbox.consume');
    expect(consume.kind).toBe(SpanKind.CONSUMER);
    expect(parentId(consume)).toBe(publish.spanContext().spanId);
    expect(consume.attributes).toMatchObject({ 'messaging.message.id': message!.id, 'rastro.stream.id': 'inbox-order-1', 'rastro.inbox.outcome': 'stored' });
    await eventually(() => inbox.counts.stored === 1, 'the inbox event');
    const [received] = await store.readStream('inbox-order-1');
    expect(received!.metadata.traceparent).toBe(traceparentOf(consume));
    const inboxAppend = spansOf(caller.traceId).find((span) => span.name === 'rastro.append' && span.attributes['rastro.stream.id'] === 'inbox-order-1');
    expect(inboxAppend && parentId(inboxAppend)).toBe(consume.spanContext().spanId);
  });

  it('takes a redelivered message with another trace as the duplicate it is', async () => {
    const store = await storeOn(backend);
    const publisher = createMemoryPublisher();
    const consumer = memoryConsumer(publisher);
    const inbox = track(consumeIntoStore({ store, consumer }));
    const message = { id: '6b1d3f4e-8c2a-4e1b-9f3d-2a7c5e9b1d40', aggregateType: 'order', aggregateId: 'o-9', type: 'OrderPaid', payload: { n: 1 }, headers: {}, occurredAt: new Date('2026-01-01T00:00:00Z') };
    const first = callerTrace();
    const second = callerTrace();
    await publisher.publish({ ...message, traceparent: first.traceparent });
    await publisher.publish({ ...message, traceparent: second.traceparent });
    await eventually(() => inbox.counts.stored + inbox.counts.duplicates === 2, 'both deliveries');
    expect(inbox.counts).toEqual({ stored: 1, duplicates: 1, deadLettered: 0 });
    const [event] = await store.readStream('o-9');
    const consume = await spanNamed(first.traceId, 'rastro.inbox.consume');
    expect(event!.metadata.traceparent).toBe(traceparentOf(consume));
    expect((await spanNamed(second.traceId, 'rastro.inbox.consume')).attributes['rastro.inbox.outcome']).toBe('duplicates');
  });

  it('records the active span on an outbox message unless it names its own, with tracestate in its headers', async () => {
    const store = await storeOn(backend);
    const outbox = createOutbox(store.db, { schema: store.schema });
    const own = callerTrace();
    const parent = propagation.extract(ROOT_CONTEXT, { traceparent: callerTrace().traceparent, tracestate: 'vendor=abc' });
    const written = await withSpan('request', {}, async (span) => {
      await store.db.transaction(async (tx) => {
        await outbox.write(tx, { aggregateType: 'charge', aggregateId: 'c1', type: 'ChargeStarted', payload: {} });
        await outbox.write(tx, { aggregateType: 'charge', aggregateId: 'c1', type: 'ChargeNoted', payload: {}, traceparent: own.traceparent });
      });
      return span.spanContext();
    }, { parent });
    await store.db.transaction((tx) => outbox.write(tx, { aggregateType: 'charge', aggregateId: 'c1', type: 'Untraced', payload: {} }));
    expect(await outboxTraceparents(store)).toEqual([`00-${written.traceId}-${written.spanId}-01`, own.traceparent, null]);
    const { rows } = await store.db.query<{ headers: Record<string, string> }>(`select headers from ${quoteSchema(store.schema)}.outbox order by position`);
    expect(rows.map((row) => row.headers)).toEqual([{ tracestate: 'vendor=abc' }, {}, {}]);
  });

  it('keeps an append retried under another trace the same event', async () => {
    const store = await storeOn(backend);
    const event = { id: '0f8c2d6a-3b1e-4c7d-9a5f-6e2b8d4c1a70', type: 'order.paid', data: { orderId: '7' } };
    const first = await withSpan('first attempt', {}, () => store.append('order-7', [event]), { parent: propagation.extract(ROOT_CONTEXT, { traceparent: callerTrace().traceparent }) });
    const retry = await withSpan('retry', {}, () => store.append('order-7', [event]), { parent: propagation.extract(ROOT_CONTEXT, { traceparent: callerTrace().traceparent }) });
    expect(retry).toEqual(first);
    expect(await store.readStream('order-7')).toHaveLength(1);
    await expect(store.append('order-7', [{ ...event, metadata: { tenant: 'other' } }])).rejects.toMatchObject({ code: 'RASTRO_EVENT_ID_CONFLICT' });
  });

  it('records a failing handler and effect as errors in the trace', async () => {
    const store = await storeOn(backend);
    const caller = callerTrace();
    await store.append('order-2', [{ type: 'order.paid', data: { orderId: '2' }, metadata: { traceparent: caller.traceparent } }]);
    const processor = defineProcessor({
      name: 'failing',
      handlers: {
        'order.paid': async (_event, ctx) => {
          const outcome = await ctx.effect('notify-seller', async () => {
            throw new Error('the seller service is down');
          });
          if (outcome.status === 'uncertain') throw new Error('could not tell the seller');
        },
      },
    });
    await runLiveRound(processor, { store, policy });
    const effect = await spanNamed(caller.traceId, 'rastro.effect notify-seller');
    expect(effect.status).toMatchObject({ code: 2, message: 'the seller service is down' });
    expect(effect.events.map((event) => event.name)).toEqual(['exception']);
    const handle = await spanNamed(caller.traceId, 'rastro.handle order.paid');
    expect(handle.status).toMatchObject({ code: 2, message: 'could not tell the seller' });
    expect(parentId(effect)).toBe(handle.spanContext().spanId);
  });
});

describe.skipIf(!NATS_URL)(`traces through NATS JetStream (${backends().at(-1)!.name})`, () => {
  const backend = backends().at(-1)!;
  it('carries the relay’s traceparent in the message headers to the inbox', async () => {
    const store = await storeOn(backend);
    const tag = randomBytes(4).toString('hex');
    const stream = `T_${tag}`;
    const prefix = `t${tag}`;
    const caller = callerTrace();
    const outbox = createOutbox(store.db, { schema: store.schema });
    await store.db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId: 'o-1', type: 'OrderPaid', payload: { n: 1 }, traceparent: caller.traceparent }));
    const publisher = createNatsPublisher({ url: NATS_URL!, stream, subjectPrefix: prefix });
    cleanups.push(() => publisher.close());
    track(await runRelay({ store, publisher, pollIntervalMs: 50 }));
    const publish = await spanNamed(caller.traceId, 'rastro.relay.publish');
    expect(parentId(publish)).toBe(caller.spanId);
    expect(publish.attributes).toMatchObject({ 'messaging.system': 'nats', 'messaging.destination.name': `${prefix}.order.OrderPaid` });

    const consumer = createNatsConsumer({ url: NATS_URL!, stream, durable: `inbox_${tag}` });
    cleanups.push(async () => {
      const { connect } = await import('@nats-io/transport-node');
      const { jetstreamManager } = await import('@nats-io/jetstream');
      const nc = await connect({ servers: NATS_URL! });
      await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
      await nc.close();
    });
    const inbox = track(consumeIntoStore({ store, consumer, streamOf: (message) => `inbox-${message.aggregateId}` }));
    await eventually(() => inbox.counts.stored === 1, 'the message in the inbox');
    const consume = await spanNamed(caller.traceId, 'rastro.inbox.consume');
    expect(parentId(consume)).toBe(publish.spanContext().spanId);
    expect(consume.attributes['messaging.destination.name']).toBe(`${prefix}.order.OrderPaid`);
    const [received] = (await store.readStream('inbox-o-1')) as RecordedEvent[];
    expect(received!.metadata.traceparent).toBe(traceparentOf(consume));
  });
});
