import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sellerNotifierClient, startSellerNotifier, type SellerNotifier } from '../../packages/server/src/demo/seller-notifier.js';
import { effectLedger } from '../../packages/rastro/src/processing/effect-admin.js';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { defineProcessor, type Processor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema, type Backend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { makeOrders, payOrders } from '../support/orders.js';

// Handlers may await several ctx requests at once: two upserts, effects at two providers, or an
// effect beside a write. A run must then finish with every request settled, in live runs and
// replays alike. Each test has a deadline well below the file's: a hang fails it.
const DEADLINE = 30_000;
const policy = { 'notify-seller': { mode: 'apply', onFailure: 'keep' }, 'notify-finance': { mode: 'apply', onFailure: 'release' } } as const;

let seller: SellerNotifier;
let finance: SellerNotifier;
beforeAll(async () => {
  seller = await startSellerNotifier({ deduplicates: false });
  finance = await startSellerNotifier({ deduplicates: true });
});
afterAll(async () => {
  await seller?.close();
  await finance?.close();
});

async function storeOn(backend: Backend): Promise<EventStore> {
  const { db, schema } = await freshSchema(backend);
  seller.sent.length = 0;
  finance.sent.length = 0;
  return createEventStore(db, { schema });
}

/** Every order.paid event: two projections written at once, two providers called at once, then one write after both. */
function parallelProcessor(): Processor {
  const notifySeller = sellerNotifierClient(seller.url);
  const notifyFinance = sellerNotifierClient(finance.url);
  return defineProcessor({
    name: 'parallel',
    handlers: {
      'order.paid': async (event, ctx) => {
        const data = event.data as { orderId: string; amountCents: number };
        const guard = { version: event.streamVersion };
        const [a, b] = await Promise.all([
          ctx.upsert('pa', event.streamId, { cents: data.amountCents }, guard),
          ctx.upsert('pb', event.streamId, { cents: data.amountCents * 2 }, guard),
        ]);
        if (!a || !b) throw new Error('a first write did not apply');
        await Promise.all([
          ctx.effect('notify-seller', (key) => notifySeller.notify({ orderId: data.orderId, commissionCents: 1 }, key)),
          ctx.effect('notify-finance', (key) => notifyFinance.notify({ orderId: data.orderId, commissionCents: 2 }, key)),
        ]);
        // An effect and a write awaited together, then one more write on its own.
        await Promise.all([
          ctx.effect('notify-audit', async () => 'suppressed by the policy'),
          ctx.upsert('pc', event.streamId, { seen: true }, guard),
        ]);
        await ctx.upsert('pd', event.streamId, { last: true }, guard);
      },
    },
  });
}

async function rowsOf(store: EventStore): Promise<Record<string, number>> {
  const { rows } = await store.db.query<{ projection: string; n: number }>(
    `select projection, count(*)::int as n from "${store.schema}".projections group by projection order by projection`,
  );
  return Object.fromEntries(rows.map((row) => [row.projection, row.n]));
}

async function expectEveryEffectOnce(store: EventStore, orders: number): Promise<void> {
  const done = await effectLedger(store).list({ state: 'done', limit: 10_000 });
  expect(done.filter((e) => e.effectType === 'notify-seller')).toHaveLength(orders);
  expect(done.filter((e) => e.effectType === 'notify-finance')).toHaveLength(orders);
  expect(new Set(seller.sent.map((n) => n.idempotencyKey)).size).toBe(orders);
  expect(seller.sent).toHaveLength(orders);
  expect(new Set(finance.sent.map((n) => n.idempotencyKey)).size).toBe(orders);
}

describe.each(backends())('handlers awaiting several requests at once on $name', (backend) => {
  it('a replay finishes with every parallel write and effect settled', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(250));
    const summary = await runReplay(parallelProcessor(), { store, runId: 'parallel', policy });
    expect(summary.counters).toMatchObject({ events: 250, written: 1000, applied: 500, suppressed: 250 });
    expect(summary.counters.parked).toBeUndefined();
    expect(await rowsOf(store)).toEqual({ pa: 250, pb: 250, pc: 250, pd: 250 });
    await expectEveryEffectOnce(store, 250);
  }, DEADLINE);

  it('a batch holding many events of one stream settles each event’s parallel requests in turn', async () => {
    const store = await storeOn(backend);
    for (let i = 0; i < 20; i++) await store.append('order-one', [{ type: 'order.paid', data: { orderId: `one-${i}`, amountCents: i } }]);
    const summary = await runReplay(parallelProcessor(), { store, runId: 'one-stream', policy });
    expect(summary.counters).toMatchObject({ events: 20, applied: 40 });
    const { rows } = await store.db.query<{ doc: { cents: number }; version: number }>(
      `select doc, version from "${store.schema}".projections where projection = 'pb'`,
    );
    expect(rows).toEqual([{ doc: { cents: 38 }, version: 20 }]);
  }, DEADLINE);

  it('two statements on ctx.tx awaited at once run in the batch’s transaction', async () => {
    const store = await storeOn(backend);
    await store.db.query(`create table "${store.schema}".tally (stream_id text, n int)`);
    await payOrders(store, makeOrders(40));
    const processor = defineProcessor({
      name: 'tally',
      handlers: {
        'order.paid': async (event, ctx) => {
          const insert = `insert into "${store.schema}".tally values ($1, $2)`;
          await Promise.all([ctx.tx.query(insert, [event.streamId, 1]), ctx.tx.query(insert, [event.streamId, 2])]);
        },
      },
    });
    await runReplay(processor, { store, runId: 'tally', policy: {} });
    const { rows } = await store.db.query<{ n: number }>(`select count(*)::int as n from "${store.schema}".tally`);
    expect(rows[0]!.n).toBe(80);
  }, DEADLINE);

  it('a live run handles events whose handlers await several requests at once', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(100, 'a'));
    const runner = await runLive(parallelProcessor(), { store, policy, pollIntervalMs: 50 });
    try {
      await payOrders(store, makeOrders(100, 'b'));
      const all = { pa: 200, pb: 200, pc: 200, pd: 200 };
      await eventually(async () => JSON.stringify(await rowsOf(store)) === JSON.stringify(all), 'every event handled', DEADLINE - 5_000);
    } finally {
      await runner.stop();
    }
    await expectEveryEffectOnce(store, 200);
  }, DEADLINE);
});
