import { randomBytes } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { wireHeaders } from '../../packages/rastro/src/brokers/message.js';
import type { Charge } from '../../packages/rastro/src/charges/charges.js';
import { consumeIntoStore } from '../../packages/rastro/src/inbox/consume-into-store.js';
import { runRelay } from '../../packages/rastro/src/outbox/relay.js';
import { chargeApp } from '../support/charges.js';
import { backends } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { memoryConsumer } from '../support/memory-consumer.js';
import { parentId, traceparentOf, useTestTracing } from '../support/trace-sdk.js';

const { spansOf, spanNamed } = useTestTracing();
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
});

describe.each(backends())('one trace of a charge, end to end, on $name', (backend) => {
  it('HTTP request → acquirer call → outbox → relay → broker message → inbox event', async () => {
    const t = await chargeApp(backend);
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const res = await t.app.inject({
      method: 'POST',
      url: '/charges',
      payload: JSON.stringify({ amountCents: 4_200, customerId: 'c-1' }),
      headers: { 'content-type': 'application/json', 'idempotency-key': 'traced', traceparent: `00-${traceId}-${callerSpan}-01` },
    });
    expect(res.statusCode).toBe(201);
    const charge = res.json<Charge>();

    const request = await spanNamed(traceId, 'HTTP POST /charges');
    expect(parentId(request)).toBe(callerSpan);
    // The acquirer call is a client span of the request, and the acquirer got its traceparent.
    const capture = await spanNamed(traceId, 'rastro.acquirer capture');
    expect(capture.kind).toBe(SpanKind.CLIENT);
    expect(parentId(capture)).toBe(request.spanContext().spanId);
    expect(capture.attributes).toMatchObject({ 'rastro.charge.idempotency_key': 'traced', 'http.response.status_code': 201 });
    expect(t.acquirer.requestsFor.get('traced')!.traceparent).toBe(traceparentOf(capture));

    // Both outbox messages were written inside the request: they carry its trace.
    const { rows } = await t.services.db.query<{ type: string; traceparent: string | null }>(`select type, traceparent from "${t.schema}".outbox order by position`);
    expect(rows.map((row) => row.type)).toEqual(['ChargeStarted', 'ChargeCaptured']);
    for (const row of rows) expect(row.traceparent?.split('-')[1]).toBe(traceId);

    const publisher = createMemoryPublisher();
    const inbox = consumeIntoStore({ store: t.services.store, consumer: memoryConsumer(publisher), streamOf: (message) => `inbox-${message.aggregateId}` });
    stops.push(() => inbox.stop());
    const relay = await runRelay({ store: t.services.store, publisher, pollIntervalMs: 50 });
    stops.push(() => relay.stop());
    await eventually(() => spansOf(traceId).filter((span) => span.name === 'rastro.relay.publish').length === 2, 'two publish spans');
    await eventually(() => inbox.counts.stored === 2, 'both messages in the inbox');
    for (const message of publisher.published) {
      const publish = spansOf(traceId).find((span) => span.name === 'rastro.relay.publish' && span.attributes['rastro.message.type'] === message.type)!;
      expect(wireHeaders(message).traceparent).toBe(traceparentOf(publish));
    }
    const received = await t.services.store.readStream(`inbox-${charge.id}`);
    expect(received.map((event) => event.type)).toEqual(['ChargeStarted', 'ChargeCaptured']);
    // The inbox events continue the same trace: one trace shows the charge from the request to the consumer.
    for (const event of received) expect(String(event.metadata.traceparent).split('-')[1]).toBe(traceId);
    const consumes = spansOf(traceId).filter((span) => span.name === 'rastro.inbox.consume');
    expect(consumes).toHaveLength(2);
  });
});
