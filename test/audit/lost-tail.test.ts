import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterEach, describe, expect, it } from 'vitest';
import { createNatsPublisher } from '../../packages/rastro/src/brokers/nats.js';
import { streamRecords } from '../../packages/rastro/src/brokers/nats-stream-records.js';
import { acquirerClient } from '../../packages/rastro/src/charges/acquirer.js';
import { auditWorld, brief } from '../support/audit-world.js';
import { NATS_URL } from '../support/brokers.js';
import { backends } from '../support/databases.js';

// What a lost tail of the database leaves outside it: captures, provider keys and broker
// messages for rows the database no longer has. Here the rows are simply never written; the
// failover suite (test/deploy/postgres-failover.test.ts) loses them for real.

const backend = backends().at(-1)!;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe(`rastro audit --ask-providers after a lost tail (${backend.name})`, () => {
  it('lists the acquirer\'s captures and names each with no charge here, without capturing anything', async () => {
    const world = await auditWorld(backend);
    const acquirer = acquirerClient(world.acquirer.url);
    const options = { checks: ['acquirer'], askProviders: true, since: new Date(Date.now() - 60_000), listCaptures: (since: Date) => acquirer.listCaptures!(since, { signal: AbortSignal.timeout(5000) }) };
    expect(brief(await world.audit(options))).toEqual([]);
    // A capture whose charge the database lost: made at the acquirer, with no row here.
    const response = await fetch(`${world.acquirer.url}/captures`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'lost-key' }, body: JSON.stringify({ amountCents: 700, currency: 'BRL', customerId: 'c-9' }) });
    expect(response.status).toBe(201);
    const requests = world.acquirer.stats.captureRequests;
    const report = await world.audit(options);
    expect(brief(report)).toEqual(['acquirer/capture-without-charge/capture:lost-key']);
    expect(report.findings[0]!.detail).toMatch(/captured 700 BRL .* with idempotency key lost-key, and no charge here has that key/);
    expect(world.acquirer.stats.captureRequests).toBe(requests);
    // Outside the window, it is not listed.
    expect(brief(await world.audit({ ...options, since: new Date(Date.now() + 1000) }))).toEqual([]);
  });

  it('lists the keys a provider has seen and names each the effect ledger lacks', async () => {
    const world = await auditWorld(backend);
    const [known] = await world.sql<{ key: string }>('select key from {s}.effects where effect_type <> $1 limit 1', ['charge.capture']);
    const lost = `${randomUUID()}:notice.sent`;
    const effectTypes = {
      'notice.sent': {
        reconcile: async () => ({ status: 'unknown' as const }),
        async *listKeys() {
          yield known!.key;
          yield lost;
        },
      },
    };
    const report = await world.audit({ checks: ['provider-keys'], askProviders: true, effectTypes });
    expect(brief(report)).toEqual([`provider-keys/provider-key-not-in-ledger/effect:${lost}`]);
    expect(report.checks[0]).toMatchObject({ name: 'provider-keys', examined: 2 });
  });

  it.skipIf(!NATS_URL)('reads the JetStream stream back and names each message whose outbox row and event the database lacks, and each the inbox acknowledged that its log lacks', async () => {
    const world = await auditWorld(backend);
    const stream = `T_LOST_${randomBytes(4).toString('hex')}`;
    const prefix = `tlost${randomBytes(4).toString('hex')}`;
    const nc = await connect({ servers: NATS_URL! });
    cleanups.push(async () => {
      await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
      await nc.close();
    });
    const publisher = createNatsPublisher({ url: NATS_URL!, stream, subjectPrefix: prefix });
    cleanups.push(() => publisher.close());
    const [row] = await world.sql<{ id: string }>('select id::text as id from {s}.outbox limit 1');
    const [event] = await world.sql<{ id: string }>('select id::text as id from {s}.events limit 1');
    const lost = randomUUID();
    const message = (id: string) => ({ id, aggregateType: 'charge', aggregateId: 'c', type: 'ChargeCaptured', payload: {}, headers: {}, traceparent: null, occurredAt: new Date() });
    for (const id of [row!.id, event!.id, lost, 'not-a-uuid']) await publisher.publish(message(id));
    const report = await world.audit({ checks: ['broker'], askProviders: true, listBrokerMessages: (since) => streamRecords({ url: NATS_URL!, stream, since }), since: new Date(Date.now() - 60_000) });
    expect(brief(report)).toEqual([`broker/message-without-row/message:${lost}`]);
    expect(report.checks[0]).toMatchObject({ name: 'broker', examined: 3 });

    // An inbox that acknowledged all four: the outbox row's message is not in its log.
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.add(stream, { durable_name: 'inbox', ack_policy: AckPolicy.Explicit });
    const consumer = await jetstream(nc).consumers.get(stream, 'inbox');
    for await (const m of await consumer.fetch({ max_messages: 4, expires: 2000 })) await m.ackAck();
    const acked = await world.audit({ checks: ['broker'], askProviders: true, listBrokerMessages: (since) => streamRecords({ url: NATS_URL!, stream, since, inboxDurable: 'inbox' }), since: new Date(Date.now() - 60_000) });
    expect(brief(acked)).toEqual([`broker/acknowledged-not-stored/message:${row!.id}`, `broker/message-without-row/message:${lost}`].sort());
  });
});
