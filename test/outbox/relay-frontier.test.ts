import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import type { BrokerMessage } from '../../packages/rastro/src/brokers/message.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { runRelay, type Relay } from '../../packages/rastro/src/outbox/relay.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { freshSchema, postgresBackend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

// These tests hold transactions open, which holds back every reader in the cluster: they run
// after the other suites (vitest.config.ts).
const running: Relay[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((relay) => relay.stop()));
});
const relay = async (options: Parameters<typeof runRelay>[0]) => {
  const started = await runRelay({ pollIntervalMs: 50, ...options });
  running.push(started);
  return started;
};

async function write(store: EventStore, aggregateId: string, n: number): Promise<void> {
  const outbox = createOutbox(store.db, { schema: store.schema });
  await store.db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId, type: 'OrderChanged', payload: { n } }));
}

const nOf = (message: BrokerMessage) => (message.payload as { n: number }).n;

const postgres = postgresBackend();
describe.skipIf(!postgres)('the relay on real PostgreSQL', () => {
  it('publishes a message whose transaction committed after later ones, however late', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    const outbox = createOutbox(db, { schema });
    const publisher = createMemoryPublisher();
    await relay({ store, publisher });
    let commitLate!: () => void;
    const late = db.transaction(async (tx) => {
      await outbox.write(tx, { aggregateType: 'order', aggregateId: 'slow', type: 'Late', payload: { n: 1 } });
      await new Promise<void>((resolve) => (commitLate = resolve));
    });
    await eventually(() => commitLate !== undefined, 'the late transaction open');
    for (let n = 2; n <= 20; n++) await write(store, `fast${n}`, n);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Held back, not skipped: nothing past the open transaction is published yet.
    expect(publisher.published.map(nOf)).toEqual([]);
    expect((await relayAdmin(store).status())[0]).toMatchObject({ pending: 19 });
    commitLate();
    await late;
    await eventually(() => publisher.published.length === 20, 'every message, the late one too');
    expect(publisher.published.map(nOf).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('orders an aggregate by commit even when a writer took its transaction id early', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    const outbox = createOutbox(db, { schema });
    const publisher = createMemoryPublisher();
    let goOn!: () => void;
    // W1 takes its transaction id first, then waits; W2 writes the aggregate and commits; then W1 writes it.
    const w1 = db.transaction(async (tx) => {
      await tx.query('select pg_current_xact_id()');
      await new Promise<void>((resolve) => (goOn = resolve));
      await outbox.write(tx, { aggregateType: 'order', aggregateId: 'a', type: 'Second', payload: { n: 2 } });
    });
    await eventually(() => goOn !== undefined, 'W1 open');
    await db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId: 'a', type: 'First', payload: { n: 1 } }));
    goOn();
    await w1;
    await relay({ store, publisher });
    await eventually(() => publisher.published.length === 2, 'both published');
    expect(publisher.published.map(nOf)).toEqual([1, 2]);
  });
});
