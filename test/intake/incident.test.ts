import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.js';
import { ordersOn } from '../support/order-intake.js';

const ORDER = '260065713';
const customer = { name: 'VIVA+ SOLAR', document: '12.345.678/0001-90' };

describe.each(backends())('order 260065713 (seed 004) on $name', (backend) => {
  it('raises no cancellation alert and keeps paidAt through 50 rounds, a full reprocess and a late stale page', async () => {
    const { orders, alerts, deliver } = await ordersOn(backend);
    // The order's history as it happened on 2026-09-04, each snapshot captured at the time shown.
    await deliver('rest', { orderId: ORDER, status: 'requested', lastUpdate: '2026-09-04T10:19:02-03:00', customer }, '2026-09-04T13:19:30Z');
    await deliver('webhook', { orderId: ORDER, status: 'cancelled', lastUpdate: '2026-09-04T14:24:11.348Z' }, '2026-09-04T14:24:12Z');
    await deliver('rest', { orderId: ORDER, status: 'cancelled', lastUpdate: '2026-09-04T11:24:11-03:00', customer }, '2026-09-04T17:08:40Z');
    await deliver('webhook', { orderId: ORDER, status: 'requested', lastUpdate: '2026-09-04T18:13:40.201Z' }, '2026-09-04T18:13:41Z');
    await deliver('webhook', { orderId: ORDER, status: 'received', lastUpdate: '2026-09-04T18:17:05.877Z', invoice: { number: 'NF-88123', amount: '9054.96' } }, '2026-09-04T18:17:06Z');
    await orders.normalizeRound();
    const before = (await orders.get(`pied:${ORDER}`)).state!;
    expect(before).toMatchObject({ status: 'received', lifecycle: 'queued', paidAt: '2026-09-04T18:17:05.877Z' });

    await orders.intake.recordImport({ source: 'pied', orderId: ORDER, outcome: 'confirmed', reference: '006' }, { at: new Date('2026-09-04T18:23:00Z') });
    const rounds: number[] = [];
    for (let round = 0; round < 50; round++) rounds.push((await orders.normalizeRound()).events);
    // The first round takes the import; the other 49 have nothing new to read.
    expect(rounds[0]).toBe(1);
    expect(rounds.slice(1).every((events) => events === 0)).toBe(true);

    const reprocess = await orders.reprocess();
    expect(reprocess.total).toBe(6);

    // A REST page fetched late still carries the 14:24 snapshot: the same one again, and one with more fields.
    await deliver('rest', { orderId: ORDER, status: 'cancelled', lastUpdate: '2026-09-04T11:24:11-03:00', customer }, '2026-09-04T18:40:00Z');
    await deliver('rest', { orderId: ORDER, status: 'cancelled', lastUpdate: '2026-09-04T11:24:11-03:00', customer, attempt: 'card' }, '2026-09-04T18:41:00Z');
    expect((await orders.normalizeRound()).events).toBe(1);

    const view = await orders.get(`pied:${ORDER}`);
    expect(alerts).toEqual([]);
    expect(view.state).toMatchObject({
      status: 'received', lifecycle: 'confirmed', paidAt: '2026-09-04T18:17:05.877Z', cancelledAfterImportAt: null,
      importedAt: '2026-09-04T18:23:00.000Z', invoice: { number: 'NF-88123', amount: '9054.96' }, lastUpdate: '2026-09-04T18:17:05.877Z',
    });
    expect(view.observedAt).toBe('2026-09-04T18:17:05.877Z');
    // The duplicate page was stored once: five snapshots, the import, one late page.
    expect(view.history.map((entry) => entry.type)).toEqual(['snapshot', 'snapshot', 'snapshot', 'snapshot', 'snapshot', 'import', 'snapshot']);
  });
});
