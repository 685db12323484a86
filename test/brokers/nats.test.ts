import { randomBytes, randomUUID } from 'node:crypto';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createNatsConsumer } from '../../packages/rastro/src/brokers/nats-consumer.js';
import { createNatsPublisher } from '../../packages/rastro/src/brokers/nats.js';
import type { Publisher } from '../../packages/rastro/src/brokers/message.js';
import { consumeIntoStore, type Inbox } from '../../packages/rastro/src/inbox/consume-into-store.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { runRelay, type Relay } from '../../packages/rastro/src/outbox/relay.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';
import { canStartNats, NATS_URL, startPrivateNats } from '../support/brokers.js';
import { eventually } from '../support/eventually.js';
import { storeWithMessages as storeWith } from '../support/outbox-writers.js';

const backend = backends().at(-1)!;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  if (!NATS_URL) return;
  nc = await connect({ servers: NATS_URL });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
});

/** A stream and subject prefix of the test's own on the shared server, deleted after it. */
function names() {
  const tag = randomBytes(4).toString('hex');
  const stream = `T_${tag}`;
  cleanups.push(() => jsm.streams.delete(stream));
  return { stream, prefix: `t${tag}` };
}

const storeWithMessages = (messages: { aggregateId: string; type?: string; n: number }[]) => storeWith(backend, messages);

function track<T extends Relay | Publisher | Inbox>(thing: T): T {
  cleanups.push(() => ('stop' in thing ? thing.stop() : thing.close()));
  return thing;
}

/** Every message of the stream, in stream order, read by a real consumer. */
async function readStream(stream: string, expected: number): Promise<{ id: string; subject: string; n: number; aggregateId: string }[]> {
  const durable = `check_${randomBytes(3).toString('hex')}`;
  // The relay's publisher creates the stream when it first connects.
  await eventually(() => jsm.streams.info(stream).then(() => true), `stream ${stream}`);
  await jsm.consumers.add(stream, { durable_name: durable, ack_policy: AckPolicy.None });
  const consumer = await jetstream(nc).consumers.get(stream, durable);
  const got: { id: string; subject: string; n: number; aggregateId: string }[] = [];
  const deadline = Date.now() + 20_000;
  while (got.length < expected && Date.now() < deadline) {
    const batch = await consumer.fetch({ max_messages: 500, expires: 1000 });
    for await (const m of batch) {
      got.push({ id: m.headers!.get('Nats-Msg-Id'), subject: m.subject, n: (m.json() as { n: number }).n, aggregateId: m.headers!.get('rastro-aggregate-id') });
    }
  }
  return got;
}

function expectInOrderPerAggregate(got: { aggregateId: string; n: number }[], written: { aggregateId: string; n: number }[]): void {
  const firsts = new Map<string, number[]>();
  const seen = new Set<number>();
  for (const { aggregateId, n } of got) {
    if (seen.has(n)) continue;
    seen.add(n);
    firsts.set(aggregateId, [...(firsts.get(aggregateId) ?? []), n]);
  }
  expect(seen.size).toBe(written.length);
  for (const [aggregateId, ns] of firsts) expect(ns).toEqual(written.filter((m) => m.aggregateId === aggregateId).map((m) => m.n));
}

describe.skipIf(!NATS_URL)(`the relay and the inbox on NATS JetStream (${backend.name})`, () => {
  it('publishes every outbox message with its id as msgID, in order per aggregate, and counts a republish as a duplicate', async () => {
    const { stream, prefix } = names();
    const written = Array.from({ length: 300 }, (_, n) => ({ aggregateId: `a${n % 13}`, n }));
    const store = await storeWithMessages(written);
    const publisher = track(createNatsPublisher({ url: NATS_URL!, stream, subjectPrefix: prefix }));
    track(await runRelay({ store, publisher, pollIntervalMs: 50, batchSize: 64 }));
    const got = await readStream(stream, 300);
    expect(got).toHaveLength(300);
    expect(got[0]!.subject).toBe(`${prefix}.order.OrderChanged`);
    expectInOrderPerAggregate(got, written);
    const again = await publisher.publish({ id: got[0]!.id, aggregateType: 'order', aggregateId: 'a0', type: 'OrderChanged', payload: { n: 0 }, headers: {}, traceparent: null, occurredAt: new Date() });
    expect(again).toEqual({ duplicate: true });
    expect((await jsm.streams.info(stream)).state.messages).toBe(300);
  });

  it('parks a message whose subject no stream captures and publishes the other aggregates', async () => {
    const { stream, prefix } = names();
    const store = await storeWithMessages([
      { aggregateId: 'lost', type: 'Unrouted', n: 1 }, { aggregateId: 'lost', n: 2 }, { aggregateId: 'fine', n: 3 },
    ]);
    const publisher = track(createNatsPublisher({
      url: NATS_URL!, stream, subjectPrefix: prefix,
      subject: (m) => (m.type === 'Unrouted' ? `nowhere${prefix}.${m.type}` : `${prefix}.${m.aggregateType}.${m.type}`),
    }));
    track(await runRelay({ store, publisher, pollIntervalMs: 50, maxAttempts: 2, retryDelayMs: 10 }));
    const parked = await eventually(async () => {
      const list = await relayAdmin(store).parked();
      return list.length === 2 ? list : undefined;
    }, 'the unrouted message and the one behind it parked');
    expect(parked[0]).toMatchObject({ reason: 'failed', aggregateKey: 'order:lost' });
    expect(parked[0]!.error).toMatch(/NATS refused/);
    expect((await readStream(stream, 1)).map((m) => m.n)).toEqual([3]);
  });

  it('warns when the stream it finds has fewer replicas than configured, and publishes all the same', async () => {
    const { stream, prefix } = names();
    await jsm.streams.add({ name: stream, subjects: [`${prefix}.>`], num_replicas: 1 });
    const warnings: string[] = [];
    const publisher = track(createNatsPublisher({ url: NATS_URL!, stream, subjectPrefix: prefix, replicas: 3, onWarning: (message) => warnings.push(message) }));
    await publisher.publish({ id: randomUUID(), aggregateType: 'order', aggregateId: 'a1', type: 'OrderChanged', payload: {}, headers: {}, traceparent: null, occurredAt: new Date() });
    expect(warnings).toEqual([expect.stringMatching(new RegExp(`stream ${stream} has 1 replica, fewer than the 3 configured \\(RASTRO_NATS_REPLICAS\\)`))]);
    expect(() => createNatsPublisher({ url: NATS_URL!, replicas: 0 })).toThrow(/replicas must be an integer from 1 to 5/);
  });

  it.skipIf(!canStartNats)('waits out a broker outage, keeps its place and loses nothing', async () => {
    const nats = await startPrivateNats();
    cleanups.push(() => nats.close());
    const written = Array.from({ length: 200 }, (_, n) => ({ aggregateId: `a${n % 7}`, n }));
    const store = await storeWithMessages(written.slice(0, 100));
    const publisher = track(createNatsPublisher({ url: nats.url, ackTimeoutMs: 500 }));
    const errors: unknown[] = [];
    const relay = track(await runRelay({ store, publisher, pollIntervalMs: 50, maxBackoffMs: 500, onError: (err) => errors.push(err) }));
    await eventually(() => relay.counters.get('published') >= 100, 'the first half published');
    await nats.kill();
    const outbox = createOutbox(store.db, { schema: store.schema });
    for (const { aggregateId, n } of written.slice(100)) {
      await store.db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId, type: 'OrderChanged', payload: { n } }));
    }
    await eventually(() => errors.length >= 2, 'the relay failing while the broker is down');
    expect((await relayAdmin(store).status())[0]!.pending).toBe(100);
    await nats.start();
    await eventually(async () => (await relayAdmin(store).status())[0]!.pending === 0, 'the relay resuming', 30_000);
    const check = await connect({ servers: nats.url });
    try {
      const info = await (await jetstreamManager(check)).streams.info('RASTRO');
      expect(info.state.messages).toBe(200);
    } finally {
      await check.close();
    }
    expect((await relayAdmin(store).parked())).toEqual([]);
  });

  it('takes messages into the log once each, acknowledges them after the commit, and dead-letters what it cannot store', async () => {
    const { stream, prefix } = names();
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    // A short duplicate window, so the same message can be stored by JetStream twice, as after a relay crash past the window.
    const publisher = track(createNatsPublisher({ url: NATS_URL!, stream, subjectPrefix: prefix, duplicateWindowMs: 100 }));
    const message = { id: randomUUID(), aggregateType: 'order', aggregateId: 'order-7', type: 'order.paid', payload: { cents: 700 }, headers: { tenant: 'acme' }, traceparent: null, occurredAt: new Date('2026-10-14T12:00:00Z') };
    await publisher.publish(message);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await publisher.publish(message)).toEqual({ duplicate: false });
    await publisher.publish({ ...message, id: randomUUID(), payload: [1, 2] });
    const h = natsHeaders();
    h.set('Nats-Msg-Id', randomUUID());
    await jetstream(nc).publish(`${prefix}.foreign.thing`, 'not json', { headers: h });

    const inbox = track(consumeIntoStore({ store, consumer: createNatsConsumer({ url: NATS_URL!, stream, durable: 'inbox' }) }));
    await eventually(() => inbox.counts.stored + inbox.counts.duplicates + inbox.counts.deadLettered === 4, 'four deliveries handled');
    expect(inbox.counts).toEqual({ stored: 1, duplicates: 1, deadLettered: 2 });
    const events = await store.readStream('order-7');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ id: message.id, type: 'order.paid', data: { cents: 700 }, metadata: { messageId: message.id, aggregateType: 'order', headers: { tenant: 'acme' } } });
    const { rows } = await db.query<{ reason: string }>(`select reason from "${schema}".inbox_dead_letters order by id`);
    expect(rows.map((row) => row.reason)).toEqual(['the payload is not a JSON object', 'no rastro-type header']);
    await eventually(async () => {
      const info = await jsm.consumers.info(stream, 'inbox');
      return info.num_ack_pending === 0 && info.num_pending === 0;
    }, 'every delivery acknowledged');
  });
});
