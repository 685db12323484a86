import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { PublishRejectedError, type BrokerMessage, type Publisher } from '../../packages/rastro/src/brokers/message.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { runRelay, type Relay } from '../../packages/rastro/src/outbox/relay.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

const running: Relay[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((relay) => relay.stop()));
});

async function relay(options: Parameters<typeof runRelay>[0]): Promise<Relay> {
  const started = await runRelay({ pollIntervalMs: 50, ...options });
  running.push(started);
  return started;
}

/** A publisher that refuses messages whose type is in `refuse`, and records the rest. */
function pickyPublisher(refuse: Set<string>): Publisher & { got: BrokerMessage[] } {
  const got: BrokerMessage[] = [];
  return {
    kind: 'memory',
    got,
    async publish(message) {
      if (refuse.has(message.type)) throw new PublishRejectedError(`no route for ${message.type}`);
      got.push(message);
      return { duplicate: false };
    },
    async close() {},
  };
}

async function writeMessages(store: EventStore, messages: { aggregateId: string; type: string; n: number }[]) {
  const outbox = createOutbox(store.db, { schema: store.schema });
  for (const { aggregateId, type, n } of messages) {
    await store.db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId, type, payload: { n } }));
  }
}

describe.each(backends())('the outbox on $name', (backend) => {
  it('rolls back a message with the rest of its transaction', async () => {
    const { db, schema } = await freshSchema(backend);
    const outbox = createOutbox(db, { schema });
    await db.query(`create table "${schema}".payments (id text primary key, status text not null check (status <> ''))`);
    await expect(
      db.transaction(async (tx) => {
        await outbox.write(tx, { aggregateType: 'charge', aggregateId: 'c1', type: 'ChargeStarted', payload: { id: 'c1' } });
        await tx.query(`insert into "${schema}".payments (id, status) values ('c1', '')`);
      }),
    ).rejects.toThrow();
    expect((await db.query(`select count(*)::int as n from "${schema}".outbox`)).rows[0]).toEqual({ n: 0 });
    expect((await db.query(`select count(*)::int as n from "${schema}".outbox_aggregates`)).rows[0]).toEqual({ n: 0 });
  });

  it('stores the traceparent and headers given, and refuses a malformed message without writing', async () => {
    const { db, schema } = await freshSchema(backend);
    const outbox = createOutbox(db, { schema });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await db.transaction((tx) => outbox.write(tx, { aggregateType: 'charge', aggregateId: 'c1', type: 'ChargeStarted', payload: { id: 'c1' }, headers: { tenant: 'acme' }, traceparent }));
    const { rows } = await db.query<{ traceparent: string; headers: unknown }>(`select traceparent, headers from "${schema}".outbox`);
    expect(rows).toEqual([{ traceparent, headers: { tenant: 'acme' } }]);
    const bad = [
      { aggregateType: 'char ge', aggregateId: 'c1', type: 'T', payload: {} },
      { aggregateType: 'charge', aggregateId: '', type: 'T', payload: {} },
      { aggregateType: 'charge', aggregateId: 'c1', type: 'has space', payload: {} },
      { aggregateType: 'charge', aggregateId: 'c1', type: 'T', payload: {}, id: 'not-a-uuid' },
      { aggregateType: 'charge', aggregateId: 'c1', type: 'T', payload: {}, traceparent: 'nope' },
      { aggregateType: 'charge', aggregateId: 'c1', type: 'T', payload: {}, headers: { 'bad name': 'x' } },
      { aggregateType: 'charge', aggregateId: 'c1', type: 'T', payload: undefined },
    ];
    for (const message of bad) {
      await expect(db.transaction((tx) => outbox.write(tx, message as never))).rejects.toMatchObject({ code: 'RASTRO_VALIDATION' });
    }
    expect((await db.query(`select count(*)::int as n from "${schema}".outbox`)).rows[0]).toEqual({ n: 1 });
  });

  it('publishes every message once, each aggregate in order, and reports no lag after', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const messages = Array.from({ length: 60 }, (_, n) => ({ aggregateId: `a${n % 7}`, type: 'OrderChanged', n }));
    await writeMessages(store, messages);
    const publisher = createMemoryPublisher();
    await relay({ store, publisher, batchSize: 25 });
    await eventually(() => publisher.published.length >= 60, 'every message published');
    const byAggregate = new Map<string, number[]>();
    for (const message of publisher.published) byAggregate.set(message.aggregateId, [...(byAggregate.get(message.aggregateId) ?? []), (message.payload as { n: number }).n]);
    for (const [aggregateId, ns] of byAggregate) expect(ns).toEqual(messages.filter((m) => m.aggregateId === aggregateId).map((m) => m.n));
    expect(new Set(publisher.published.map((m) => m.id)).size).toBe(60);
    // Counters and pending are read by two statements: wait until both show the last commit.
    const [status] = await eventually(async () => {
      const all = await relayAdmin(store).status();
      return all[0]?.counters.published === 60 && all[0].pending === 0 ? all : undefined;
    }, 'counters saved');
    expect(status).toMatchObject({ name: 'outbox', source: 'outbox', pending: 0, lagMs: null, parked: 0 });
  });

  it('parks a message the broker keeps refusing, holds back only its aggregate, and publishes it on retry', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await writeMessages(store, [
      { aggregateId: 'poisoned', type: 'Fine', n: 1 },
      { aggregateId: 'poisoned', type: 'Poison', n: 2 },
      { aggregateId: 'poisoned', type: 'Fine', n: 3 },
      { aggregateId: 'healthy', type: 'Fine', n: 4 },
    ]);
    const refuse = new Set(['Poison']);
    const publisher = pickyPublisher(refuse);
    await relay({ store, publisher, maxAttempts: 3, retryDelayMs: 5 });
    const admin = relayAdmin(store);
    const parked = await eventually(async () => {
      const list = await admin.parked();
      return list.length === 2 ? list : undefined;
    }, 'two parked messages');
    expect(parked.map((p) => [p.reason, p.aggregateKey])).toEqual([['failed', 'order:poisoned'], ['waiting', 'order:poisoned']]);
    expect(parked[0]!.error).toContain('no route for Poison');
    // A later message of the blocked aggregate waits too; other aggregates flow.
    await writeMessages(store, [{ aggregateId: 'poisoned', type: 'Fine', n: 5 }, { aggregateId: 'healthy', type: 'Fine', n: 6 }]);
    await eventually(() => publisher.got.some((m) => (m.payload as { n: number }).n === 6), 'the healthy aggregate goes on');
    await eventually(async () => (await admin.parked()).length === 3, 'the later message parked behind');
    expect(publisher.got.map((m) => (m.payload as { n: number }).n)).toEqual([1, 4, 6]);

    expect(await admin.retry(parked[0]!.messageId, publisher)).toEqual({ published: 0, stillParked: 3 });
    refuse.clear();
    expect(await admin.retry(parked[1]!.messageId, publisher)).toEqual({ published: 3, stillParked: 0 });
    expect(publisher.got.map((m) => (m.payload as { n: number }).n)).toEqual([1, 4, 6, 2, 3, 5]);
    // Unblocked: the relay publishes the aggregate's new messages again.
    await writeMessages(store, [{ aggregateId: 'poisoned', type: 'Fine', n: 7 }]);
    await eventually(() => publisher.got.some((m) => (m.payload as { n: number }).n === 7), 'the aggregate flows again');
  });

  it('skips a parked message for good and publishes the rest of its aggregate', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await writeMessages(store, [{ aggregateId: 'x', type: 'Poison', n: 1 }, { aggregateId: 'x', type: 'Fine', n: 2 }]);
    const publisher = pickyPublisher(new Set(['Poison']));
    await relay({ store, publisher, maxAttempts: 1 });
    const admin = relayAdmin(store);
    const parked = await eventually(async () => ((await admin.parked()).length === 2 ? admin.parked() : undefined), 'parked');
    expect(await admin.skip(parked[0]!.messageId, publisher)).toEqual({ published: 1, stillParked: 0 });
    expect(publisher.got.map((m) => (m.payload as { n: number }).n)).toEqual([2]);
    const [status] = await admin.status();
    expect(status!.counters).toMatchObject({ skipped: 1, published: 1, parked: 2 });
  });

  it('relays chosen events straight from the log, with their ids', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const publisher = createMemoryPublisher();
    await relay({ store, publisher, events: { types: ['order.paid'], streamPrefix: 'order-' } });
    const paid = await store.append('order-1', [{ type: 'order.paid', data: { cents: 10 }, metadata: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tenant: 'acme' } }]);
    await store.append('order-1', [{ type: 'order.viewed', data: {} }]);
    await store.append('invoice-1', [{ type: 'order.paid', data: { cents: 99 } }]);
    await store.append('order-2', [{ type: 'order.paid', data: { cents: 20 } }]);
    await eventually(() => publisher.published.length === 2, 'the two chosen events');
    const [first] = await store.readStream('order-1');
    expect(paid.positions).toHaveLength(1);
    expect(publisher.published[0]).toMatchObject({
      id: first!.id, aggregateType: 'order', aggregateId: 'order-1', type: 'order.paid', payload: { cents: 10 },
      headers: { tenant: 'acme' }, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    expect(publisher.published[1]).toMatchObject({ aggregateId: 'order-2', payload: { cents: 20 } });
  });

  it('refuses a relay name already used for another source, and a changed partition count', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const publisher = createMemoryPublisher();
    const first = await relay({ store, publisher, name: 'shared' });
    await first.stop();
    await expect(runRelay({ store, publisher, name: 'shared', events: { types: ['x'] } })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'name' });
    await expect(runRelay({ store, publisher, name: 'shared', partitions: 4 })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'partitions' });
    await expect(runRelay({ store, publisher, events: {} })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'source' });
  });
});
