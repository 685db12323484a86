import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollProvider } from '../../packages/rastro/src/intake/provider-poller.js';
import { startProviderFake, type ProviderFake } from '../../packages/rastro/src/intake/provider-fake.js';
import { testApp } from '../support/app.js';
import { backends } from '../support/databases.js';

const webhook = { orderId: '260074525', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z', customer: { name: 'C' } };

describe.each(backends())('order intake over HTTP on $name', (backend) => {
  let provider: ProviderFake;
  beforeAll(async () => {
    provider = await startProviderFake();
  });
  afterAll(() => provider.close());

  it('stores a webhook snapshot once however often it is delivered, and shows it with the normalized state', async () => {
    const t = await testApp(backend);
    const first = await t.post('/intake/pied/orders', webhook);
    expect(first.statusCode).toBe(202);
    expect(first.json()).toMatchObject({ order: 'pied:260074525', streamId: 'order:pied:260074525' });
    const again = await t.post('/intake/pied/orders', { ...webhook, customer: { name: 'C' } });
    expect(again.json().eventId).toBe(first.json().eventId);
    expect(await t.eventCount()).toBe(1);

    const before = await t.get('/orders/pied:260074525');
    expect(before.json()).toMatchObject({ id: 'pied:260074525', state: null, history: [{ type: 'snapshot', snapshot: { channel: 'webhook', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z' } }] });
    await t.orders.normalizeRound();
    const after = await t.get('/orders/pied:260074525');
    expect(after.json()).toMatchObject({ state: { status: 'received', paidAt: '2026-09-08T11:54:24.512Z', lifecycle: 'captured' }, observedAt: '2026-09-08T11:54:24.512Z' });
  });

  it('refuses a bad payload with a 422 problem and stores nothing', async () => {
    const t = await testApp(backend);
    const bad: [string, unknown, RegExp][] = [
      ['/intake/pied/orders', { status: 'received' }, /orderId/],
      ['/intake/pied/orders', { orderId: '1', status: 'paid' }, /status/],
      ['/intake/pied/orders', { orderId: '1', status: 'received', lastUpdate: 'yesterday' }, /lastUpdate: is not a date-time/],
      ['/intake/pied/orders', { orderId: '1', status: 'received', lastUpdate: '2026-09-08T08:54:24' }, /lastUpdate/],
      ['/intake/pied/orders', { orderId: '1', status: 'received', lastUpdate: 12 }, /lastUpdate/],
      ['/intake/pied/orders', { orderId: { id: 1 }, status: 'received' }, /orderId/],
      ['/intake/Not%20A%20Source/orders', { orderId: '1', status: 'received' }, /source/],
      ['/intake/pied/orders', [webhook], /body/],
    ];
    for (const [url, body, detail] of bad) {
      const res = await t.post(url, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json().detail).toMatch(detail);
      expect(res.body).not.toMatch(/at .*\.ts|select |insert /i);
    }
    expect(await t.eventCount()).toBe(0);
  });

  it('records the import, re-normalizes on request, and answers 404 for an unknown order', async () => {
    const t = await testApp(backend);
    await t.post('/intake/pied/orders', { ...webhook, invoice: { n: 1 } });
    const imported = await t.post('/orders/pied:260074525/import', { outcome: 'confirmed', reference: '006' });
    expect(imported.statusCode).toBe(201);
    expect((await t.post('/orders/pied:260074525/import', { outcome: 'maybe' })).statusCode).toBe(422);
    expect((await t.post('/orders/pied:1/import', { outcome: 'confirmed' })).json()).toMatchObject({ status: 404, code: 'RASTRO_ORDER_NOT_FOUND' });
    const renormalized = await t.post('/orders/pied:260074525/renormalize', {});
    expect(renormalized.statusCode).toBe(200);
    expect(renormalized.json()).toMatchObject({ total: 2 });
    expect((await t.get('/orders/pied:260074525')).json().state).toMatchObject({ lifecycle: 'confirmed', importedAt: expect.any(String) });
    expect((await t.get('/orders/pied:404')).statusCode).toBe(404);
    expect((await t.get('/orders/nocolon')).statusCode).toBe(422);
    expect((await t.post('/orders/pied:404/renormalize', {})).statusCode).toBe(404);
  });

  it('requires the API key on the intake route like on every other', async () => {
    const t = await testApp(backend, { apiKey: 'k' });
    expect((await t.post('/intake/pied/orders', webhook)).statusCode).toBe(401);
    expect((await t.post('/intake/pied/orders', webhook, { authorization: 'Bearer k' })).statusCode).toBe(202);
  });

  it('takes webhooks and REST pages from the provider fake over real sockets, and the REST page brings the invoice', async () => {
    const t = await testApp(backend);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const address = t.app.server.address() as { port: number };
      const target = { baseUrl: `http://127.0.0.1:${address.port}`, source: 'pied' };
      provider.setOrder({ orderId: '260079167', status: 'received', lastUpdate: new Date('2026-09-08T11:54:24.512Z'), customer: { name: 'C' } });
      expect(await provider.sendWebhook(target, '260079167')).toBe(202);
      expect(await provider.sendWebhook(target, '260079167', { status: 'paid' as never })).toBe(422);
      await t.orders.normalizeRound();
      provider.setOrder({ orderId: '260079167', status: 'received', lastUpdate: new Date('2026-09-08T11:54:24.512Z'), customer: { name: 'C' }, invoice: { number: 'NF-1' } });
      for (let i = 0; i < 6; i++) provider.setOrder({ orderId: `26008000${i}`, status: 'requested', lastUpdate: new Date('2026-09-08T12:00:00Z') });
      provider.setOrder({ orderId: '260080009', status: 'on-hold' as never, lastUpdate: null });
      const pages: number[] = [];
      const polled = await pollProvider(t.orders.intake, { source: 'pied', baseUrl: provider.url, pageSize: 3, onPage: (p) => pages.push(p.page) });
      // A page item that is not a valid snapshot is reported and skipped; the rest of its page is stored.
      expect(polled).toMatchObject({ page: 3, stored: 7, rejected: [{ orderId: '260080009', reason: expect.stringMatching(/status/) }] });
      expect(pages).toEqual([1, 2, 3]);
      await t.orders.normalizeRound();
      const order = (await t.get('/orders/pied:260079167')).json();
      expect(order.state).toMatchObject({ invoice: { number: 'NF-1' }, lifecycle: 'queued' });
      expect(order.history.map((entry: { snapshot: { lastUpdateText: string } }) => entry.snapshot.lastUpdateText)).toEqual(['2026-09-08T11:54:24.512Z', '2026-09-08T08:54:24-03:00']);
      provider.failPages(1);
      await expect(pollProvider(t.orders.intake, { source: 'pied', baseUrl: provider.url })).rejects.toMatchObject({ code: 'RASTRO_PROVIDER' });
    } finally {
      await t.app.close();
    }
  });
});
