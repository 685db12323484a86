import { describe, expect, it } from 'vitest';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { ORDER_NORMALIZER_POLICY } from '../../packages/rastro/src/intake/order-normalizer.js';
import { backends } from '../support/databases.js';
import { ordersOn } from '../support/order-intake.js';

const STUCK = ['260074525', '260079167', '260079176', '260079300', '260079309'];
const customer = { name: 'Cliente' };

describe.each(backends())('the order normalizer on $name', (backend) => {
  it('applies the REST page at the whole second after a webhook at .512 s, so the invoice lands (2026-09-08)', async () => {
    const { orders, deliver } = await ordersOn(backend);
    for (const id of STUCK) {
      await deliver('webhook', { orderId: id, status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z', customer }, '2026-09-08T11:54:25Z');
    }
    await orders.normalizeRound();
    for (const id of STUCK) {
      await deliver('rest', { orderId: id, status: 'received', lastUpdate: '2026-09-08T08:54:24-03:00', customer, invoice: { number: `NF-${id}` } }, '2026-09-08T11:59:00Z');
    }
    await orders.normalizeRound();
    for (const id of STUCK) {
      const { state, observedAt } = await orders.get(`pied:${id}`);
      expect(state).toMatchObject({ invoice: { number: `NF-${id}` }, lifecycle: 'queued', paidAt: '2026-09-08T11:54:24.512Z' });
      // The reference is the page's whole second now (the seed's COALESCE stores the incoming one); the webhook's .512 still ties it.
      expect(observedAt).toBe('2026-09-08T11:54:24.000Z');
    }
  });

  it('keeps the reference when a snapshot carries no lastUpdate, so a stale one after it is still refused', async () => {
    const { orders, deliver } = await ordersOn(backend);
    await deliver('webhook', { orderId: '1', status: 'cancelled', lastUpdate: '2026-09-08T12:00:00.000Z' }, '2026-09-08T12:00:01Z');
    await orders.normalizeRound();
    await deliver('webhook', { orderId: '1', status: 'cancelled', note: 'no time given' }, '2026-09-08T12:01:00Z');
    await orders.normalizeRound();
    await deliver('rest', { orderId: '1', status: 'received', lastUpdate: '2026-09-08T08:59:59-03:00' }, '2026-09-08T12:02:00Z');
    await orders.normalizeRound();
    const { state, observedAt } = await orders.get('pied:1');
    expect(state).toMatchObject({ status: 'cancelled', paidAt: null, payload: { note: 'no time given' } });
    expect(observedAt).toBe('2026-09-08T12:00:00.000Z');
  });

  it('alerts a real cancellation after import exactly once, across rounds, a reprocess and a re-normalize', async () => {
    const { orders, alerts, deliver, store } = await ordersOn(backend);
    await deliver('webhook', { orderId: '7', status: 'received', lastUpdate: '2026-09-08T10:00:00.100Z', customer, invoice: { n: 1 } }, '2026-09-08T10:00:01Z');
    await orders.normalizeRound();
    await orders.intake.recordImport({ source: 'pied', orderId: '7', outcome: 'confirmed' }, { at: new Date('2026-09-08T10:05:00Z') });
    await orders.normalizeRound();
    const cancelId = await deliver('webhook', { orderId: '7', status: 'cancelled', lastUpdate: '2026-09-08T11:00:00.250Z' }, '2026-09-08T11:00:01Z');
    await orders.normalizeRound();
    // Cancelled again by REST (the same instant), then a redelivery of the webhook.
    await deliver('rest', { orderId: '7', status: 'cancelled', lastUpdate: '2026-09-08T08:00:00-03:00' }, '2026-09-08T11:05:00Z');
    await deliver('webhook', { orderId: '7', status: 'cancelled', lastUpdate: '2026-09-08T11:00:00.250Z' }, '2026-09-08T11:06:00Z');
    await orders.normalizeRound();
    await orders.reprocess();
    await orders.renormalize('pied:7');
    await orders.normalizeRound();
    expect(alerts.map((entry) => entry.key)).toEqual([`${cancelId}:order.cancelled-after-import`]);
    expect(alerts[0]!.alert).toMatchObject({ order: 'pied:7', cancelledAt: '2026-09-08T11:00:00.250Z', importedAt: '2026-09-08T10:05:00.000Z' });
    expect((await orders.get('pied:7')).state).toMatchObject({ status: 'cancelled', lifecycle: 'confirmed', cancelledAfterImportAt: '2026-09-08T11:00:00.250Z' });
    expect((await store.readStream('order:pied:7')).length).toBe(4);
  });

  it('re-normalizes an order from its raw snapshots, not from the stored row', async () => {
    const { orders, deliver, store } = await ordersOn(backend);
    await deliver('webhook', { orderId: '9', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z', customer }, '2026-09-08T11:54:25Z');
    await deliver('rest', { orderId: '9', status: 'received', lastUpdate: '2026-09-08T08:54:24-03:00', customer, invoice: { n: 9 } }, '2026-09-08T11:59:00Z');
    await orders.normalizeRound();
    // Damage the stored row: a re-normalize that re-read it would keep the damage.
    await store.db.query(`update "${store.schema}".projections set doc = jsonb_set(doc, '{invoice}', 'null') where key = 'pied:9'`);
    const summary = await orders.renormalize('pied:9');
    expect(summary.total).toBe(2);
    expect((await orders.get('pied:9')).state).toMatchObject({ invoice: { n: 9 }, lifecycle: 'queued' });
    await expect(orders.renormalize('pied:404')).rejects.toMatchObject({ code: 'RASTRO_ORDER_NOT_FOUND' });
  });

  it('gives two normalizers running at once the result of one', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => String(300 + i));
    const cancels = (id: string) => Number(id) % 2 === 1;
    /** The same deliveries for every setup: a REST page, the import, a webhook, a late stale REST page. */
    const deliverAll = async ({ orders, deliver }: Awaited<ReturnType<typeof ordersOn>>, between: () => Promise<unknown>) => {
      for (const id of ids) await deliver('rest', { orderId: id, status: 'requested', lastUpdate: '2026-09-08T07:00:00-03:00', customer, invoice: { id } }, '2026-09-08T10:00:01Z');
      await between();
      for (const id of ids) await orders.intake.recordImport({ source: 'pied', orderId: id, outcome: 'confirmed' }, { at: new Date('2026-09-08T10:10:00Z'), id: `00000000-0000-4000-8000-000000000${id}` });
      for (const id of ids) {
        await deliver('webhook', { orderId: id, status: cancels(id) ? 'cancelled' : 'received', lastUpdate: '2026-09-08T10:30:00.900Z' }, '2026-09-08T10:30:01Z');
        await deliver('rest', { orderId: id, status: 'requested', lastUpdate: '2026-09-08T07:00:00-03:00', late: true }, '2026-09-08T10:31:00Z');
      }
    };
    const one = await ordersOn(backend);
    await deliverAll(one, () => one.orders.normalizeRound());
    await one.orders.normalizeRound();

    const two = await ordersOn(backend);
    await deliverAll(two, () => two.orders.normalizeRound());
    // Live runners and two full reprocesses at once. PGlite has one session, so one live runner there.
    const runners = await Promise.all(
      Array.from({ length: backend.name === 'postgres' ? 2 : 1 }, () => runLive(two.orders.normalizer, { store: two.store, policy: ORDER_NORMALIZER_POLICY, pollIntervalMs: 50 })),
    );
    await Promise.all([two.orders.reprocess(), two.orders.reprocess(), two.orders.normalizeRound()]);
    for (const runner of runners) await runner.stop();
    await two.orders.normalizeRound();

    for (const id of ids) {
      const alone = (await one.orders.get(`pied:${id}`)).state;
      expect(alone).toMatchObject({ status: cancels(id) ? 'cancelled' : 'received', lifecycle: 'confirmed' });
      expect((await two.orders.get(`pied:${id}`)).state).toEqual(alone);
    }
    const alerted = (setup: typeof one) => setup.alerts.map((entry) => entry.key).sort();
    expect(alerted(one)).toHaveLength(ids.filter(cancels).length);
    expect(alerted(two)).toEqual(alerted(one));
  });
});
