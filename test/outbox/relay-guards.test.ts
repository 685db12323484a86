import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { PublishRejectedError, type BrokerMessage, type Publisher } from '../../packages/rastro/src/brokers/message.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { runRelay, type Relay } from '../../packages/rastro/src/outbox/relay.js';
import { outboxRetention } from '../../packages/rastro/src/outbox/retention.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

const running: Relay[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((relay) => relay.stop()));
});
const relay = async (options: Parameters<typeof runRelay>[0]) => {
  const started = await runRelay({ pollIntervalMs: 50, ...options });
  running.push(started);
  return started;
};

async function write(store: EventStore, aggregateId: string, n: number, type = 'OrderChanged'): Promise<void> {
  const outbox = createOutbox(store.db, { schema: store.schema });
  await store.db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId, type, payload: { n } }));
}

const nOf = (message: BrokerMessage) => (message.payload as { n: number }).n;

describe.each(backends())('relay guards on $name', (backend) => {
  it('keeps each aggregate in order when publishes are refused and retried at random', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    for (let n = 0; n < 400; n++) await write(store, `a${n % 4}`, n);
    const accepted: BrokerMessage[] = [];
    const tried = new Set<string>();
    const flaky: Publisher = {
      kind: 'memory',
      async publish(message) {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
        // The first attempt of about a third of the messages is refused; the retry goes through.
        if (!tried.has(message.id) && Math.random() < 0.3) {
          tried.add(message.id);
          throw new PublishRejectedError('try again');
        }
        accepted.push(message);
        return { duplicate: false };
      },
      async close() {},
    };
    await relay({ store, publisher: flaky, retryDelayMs: 1, maxAttempts: 3, batchSize: 200 });
    await eventually(() => accepted.length === 400, 'every message accepted');
    for (let a = 0; a < 4; a++) {
      const ns = accepted.filter((m) => m.aggregateId === `a${a}`).map(nOf);
      expect(ns).toEqual([...ns].sort((x, y) => x - y));
    }
  });

  it('backs off through an outage even while new messages keep waking it', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    let attempts = 0;
    const down: Publisher = {
      kind: 'memory',
      async publish() {
        attempts++;
        throw new Error('connection lost');
      },
      async close() {},
    };
    await write(store, 'a0', 0);
    await relay({ store, publisher: down, backoffMs: 200, maxBackoffMs: 400 });
    // A write every 20 ms for 1.2 s, all to one aggregate (one publish per attempt): each one notifies the relay.
    for (let n = 1; n <= 60; n++) {
      await write(store, 'a0', n);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Backoff of 200, 400, 400… ms: a handful of attempts, not one per notification.
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(attempts).toBeLessThanOrEqual(8);
  });

  it('publishes each message once with two relays of one name sharing the partitions', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const publisher = createMemoryPublisher({ keep: 10_000 });
    const first = await relay({ store, publisher, batchSize: 50 });
    const second = await relay({ store, publisher, batchSize: 50 });
    for (let n = 0; n < 600; n++) await write(store, `a${n % 37}`, n);
    await eventually(() => publisher.published.length >= 600, 'every message published');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(publisher.published).toHaveLength(600);
    expect(new Set(publisher.published.map((m) => m.id)).size).toBe(600);
    if (backend.name === 'postgres') {
      expect(first.partitions.length + second.partitions.length).toBe(8);
      expect(first.partitions.some((p) => second.partitions.includes(p))).toBe(false);
    }
  });

  it('deletes only messages every relay has published, and nothing before a relay has run', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const retention = outboxRetention(store);
    for (let n = 0; n < 10; n++) await write(store, `a${n % 3}`, n, n === 4 ? 'Poison' : 'OrderChanged');
    expect(await retention.deletePublished({ days: 0 })).toBe(0);
    const accepted: BrokerMessage[] = [];
    const picky: Publisher = {
      kind: 'memory',
      async publish(message) {
        if (message.type === 'Poison') throw new PublishRejectedError('refused');
        accepted.push(message);
        return { duplicate: false };
      },
      async close() {},
    };
    const r = await relay({ store, publisher: picky, maxAttempts: 1 });
    // n=4 is a1's second message: a1's later ones (7) wait behind it.
    await eventually(() => accepted.length === 8, 'all but the parked ones');
    await eventually(async () => (await relayAdmin(store).status())[0]?.pending === 2, 'two parked pending');
    await r.stop();
    running.splice(running.indexOf(r), 1);
    await write(store, 'a2', 10);
    await write(store, 'a9', 11);
    expect(await retention.deletePublished({ days: 0, batchSize: 3 })).toBe(8);
    const { rows } = await db.query<{ n: number }>(`select (payload->>'n')::int as n from "${schema}".outbox order by position`);
    expect(rows.map((row) => row.n)).toEqual([4, 7, 10, 11]);
    // Not old enough yet: kept.
    expect(await retention.deletePublished({ days: 7 })).toBe(0);
    await expect(retention.deletePublished({ days: -1 })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'days' });
  });

  it('drops a whole daily partition once everything in it is published, and keeps one that is not', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const retention = outboxRetention(store);
    const created = await retention.ensureDailyPartitions({ daysAhead: 2 });
    expect(created).toHaveLength(2);
    expect(await retention.ensureDailyPartitions({ daysAhead: 2 })).toEqual([]);
    for (const day of ['20261101', '20261102']) {
      const from = `${day.slice(0, 4)}-${day.slice(4, 6)}-${day.slice(6)}`;
      await db.query(`create table "${schema}".outbox_p${day} partition of "${schema}".outbox for values from ('${from}T00:00:00Z') to ('${from}T23:59:59.999999Z')`);
      await db.query(`insert into "${schema}".outbox (tx_order, id, aggregate_type, aggregate_id, type, payload, created_at)
        values (1, gen_random_uuid(), 'order', $1, $2, '{}', $3)`, [`old-${day}`, day === '20261102' ? 'Poison' : 'Old', `${from}T12:00:00Z`]);
    }
    const picky: Publisher = {
      kind: 'memory',
      async publish(message) {
        if (message.type === 'Poison') throw new PublishRejectedError('refused');
        return { duplicate: false };
      },
      async close() {},
    };
    await relay({ store, publisher: picky, maxAttempts: 1 });
    await eventually(async () => (await relayAdmin(store).parked()).length === 1, 'the poison parked');
    expect(await retention.dropExpiredPartitions({ days: 7 })).toEqual({ dropped: ['outbox_p20261101'], kept: ['outbox_p20261102'] });
  });
});
