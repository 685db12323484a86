// An order service on Drizzle (node-postgres) and its own pg pool: it pays an order in one
// Drizzle transaction (its own row, the event, the outbox message), runs the commissions
// processor live, replays the log (a simulate, then for real), and relays the outbox. Run with
// DATABASE_URL (and NATS_URL for JetStream); it checks what it did and exits 1 if anything is off.
import { and, eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { integer, pgSchema, text } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { createEventStore, createMemoryPublisher, createOutbox, defineEvents, fromDrizzle, migrate, openDatabase, projections, relayAdmin, runLiveRound, runRelay, runReplay, type Publisher } from 'rastro';
import { createNatsPublisher } from 'rastro/nats';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { commissions, events, policy, type OrderPaidV1 } from './orders.js';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('set DATABASE_URL to a PostgreSQL server');
const schema = `example_drizzle_${process.pid}`;
const orders = pgSchema(schema).table('orders', {
  id: text('id').primaryKey(),
  sellerId: text('seller_id').notNull(),
  amountCents: integer('amount_cents').notNull(),
  status: text('status').notNull(),
});
const pool = new pg.Pool({ connectionString: url, max: 5 });
const db = await openDatabase({ pool });
await migrate(db, { schema });
await pool.query(`create table "${schema}".orders (id text primary key, seller_id text not null, amount_cents int not null, status text not null)`);
const orm = drizzle(pool);
const store = createEventStore(db, { schema, events });
const outbox = createOutbox(db, { schema });

/** Pays an order: its row, its event and its outbox message commit together, or not at all. */
async function payOrder(orderId: string): Promise<void> {
  await orm.transaction(async (trx) => {
    const [order] = await trx.update(orders).set({ status: 'paid' }).where(and(eq(orders.id, orderId), eq(orders.status, 'placed')))
      .returning({ sellerId: orders.sellerId, amountCents: orders.amountCents });
    if (!order) throw new Error(`no result: order ${orderId} is not placed`);
    const tx = fromDrizzle(trx);
    await store.append(`order-${orderId}`, [{ type: 'order.paid', data: { orderId, sellerId: order.sellerId, amountCents: order.amountCents, percent: 8 } }], { expectedVersion: 'no-stream', tx });
    await outbox.write(tx, { aggregateType: 'order', aggregateId: orderId, type: 'OrderPaid', payload: { orderId, amountCents: order.amountCents } });
  });
}

// Last year's code paid an order too, in the shape of then (version 1).
const lastYear = createEventStore(db, { schema, events: defineEvents<{ 'order.paid': OrderPaidV1 }>({ 'order.paid': {} }) });
await lastYear.append('order-2025-001', [{ type: 'order.paid', data: { orderId: '2025-001', amount: 99.9 } }]);

await orm.insert(orders).values({ id: '42', sellerId: 's-7', amountCents: 12_500, status: 'placed' });
await payOrder('42');
// Paying it twice is refused (the order is no longer placed): the transaction leaves nothing behind.
const again = await payOrder('42').then(() => 'paid twice', (err: Error) => err.message);

const sent: string[] = [];
const processor = commissions({ notify: async (_message, key) => void sent.push(key) });
await runLiveRound(processor, { store, policy });
const simulated = await runReplay(processor, { store, policy, runId: 'check', simulate: true });
const replayed = await runReplay(processor, { store, policy, runId: 'fix' });

const natsUrl = process.env.NATS_URL;
const publisher: Publisher = natsUrl ? createNatsPublisher({ url: natsUrl, stream: schema.toUpperCase(), subjectPrefix: schema }) : createMemoryPublisher();
const relay = await runRelay({ store, publisher, pollIntervalMs: 50 });
for (let i = 0; i < 200 && (await relayAdmin(store).status())[0]?.pending !== 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
const [relayed] = await relayAdmin(store).status();
await relay.stop();
await publisher.close();

const rows = await projections(store).list<{ sellerId: string; cents: number }>('commission');
const report = {
  commissions: rows.map((row) => [row.key, row.doc.cents]),
  notifications: sent.length,
  payTwice: again,
  simulate: simulated.counters,
  replay: replayed.counters,
  relayed: relayed?.counters.published ?? 0,
  broker: publisher.kind,
};
console.log(JSON.stringify(report));

const problems = [
  // 12,500 × 8% = 1,000; the old order, upcast from 99.9 reais: 9,990 × 8% = 799.
  JSON.stringify(report.commissions) !== JSON.stringify([['2025-001', 799], ['42', 1000]]) && 'commissions',
  report.notifications !== 2 && 'each seller notified once',
  (replayed.counters['already-recorded'] ?? 0) !== 2 && 'the replay sent nothing again',
  (simulated.counters['already-recorded'] ?? 0) !== 2 && 'the simulate saw both effects recorded',
  !/duplicate key|no result/.test(report.payTwice) && 'paying twice refused',
  report.relayed !== 1 && 'the outbox message relayed',
].filter(Boolean);
await pool.query(`drop schema "${schema}" cascade`);
if (natsUrl) {
  const nc = await connect({ servers: natsUrl });
  await (await jetstreamManager(nc)).streams.delete(schema.toUpperCase());
  await nc.close();
}
await db.close();
await pool.end();
if (problems.length > 0) {
  console.error(`not as expected: ${problems.join(', ')}`);
  process.exit(1);
}
