import { describe, expect, it } from 'vitest';
import { testApp } from '../support/app.js';
import { backends } from '../support/databases.js';

describe.each(backends())('POST /orders/{id}/import with an Idempotency-Key on $name', (backend) => {
  it('records the outcome once however often it is retried, and refuses the key with another body', async () => {
    const t = await testApp(backend);
    await t.post('/intake/pied/orders', { orderId: '42', status: 'received' });
    const key = { 'idempotency-key': 'import-42-a' };
    const first = await t.post('/orders/pied:42/import', { outcome: 'confirmed', reference: 'BO-7' }, key);
    expect(first.statusCode, first.body).toBe(201);
    const again = await t.post('/orders/pied:42/import', { reference: 'BO-7', outcome: 'confirmed' }, key);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const imports = async () => (await t.get('/orders/pied:42')).json<{ history: { type: string }[] }>().history.filter((entry) => entry.type !== 'snapshot').length;
    expect(await imports()).toBe(1);

    const reused = await t.post('/orders/pied:42/import', { outcome: 'failed', reason: 'no stock' }, key);
    expect(reused.statusCode).toBe(422);
    expect(reused.json()).toMatchObject({ code: 'RASTRO_IDEMPOTENCY_KEY_REUSED' });
    expect(await imports()).toBe(1);
    // Without a key, each call records an outcome, as before.
    expect((await t.post('/orders/pied:42/import', { outcome: 'failed', reason: 'no stock' })).statusCode).toBe(201);
    expect(await imports()).toBe(2);
  });
});
