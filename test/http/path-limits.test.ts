import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_ORDER_ID_LENGTH, MAX_SOURCE_LENGTH } from '../../packages/rastro/src/intake/order-snapshot.js';
import { MAX_EFFECT_KEY_LENGTH } from '../../packages/server/src/http/path-limits.js';
import { testApp } from '../support/app.js';
import { backends } from '../support/databases.js';

describe.each(backends())('the documented maximum sizes reach their routes on $name', (backend) => {
  it('serves an order with a 40-character source and a 64-character order id on every order route', async () => {
    const t = await testApp(backend);
    const source = 's'.repeat(MAX_SOURCE_LENGTH);
    const orderId = '9'.repeat(MAX_ORDER_ID_LENGTH);
    const intake = await t.post(`/intake/${source}/orders`, { orderId, status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z' });
    expect(intake.statusCode, intake.body).toBe(202);
    const id = `${source}:${orderId}`;
    expect((await t.get(`/orders/${id}`)).statusCode).toBe(200);
    expect((await t.post(`/orders/${id}/renormalize`, {})).statusCode).toBe(200);
    const imported = await t.post(`/orders/${id}/import`, { outcome: 'confirmed', reference: 'BO-1' });
    expect(imported.statusCode, imported.body).toBe(201);
    // One past each maximum is refused, as a client error naming the field.
    const longer = await t.post(`/intake/${source}x/orders`, { orderId, status: 'received' });
    expect(longer.statusCode).toBe(422);
    expect((await t.get(`/orders/${source}x:${orderId}`)).statusCode).toBeGreaterThanOrEqual(400);
    const tooLong = await t.get(`/orders/${source}:${orderId}9`);
    expect(tooLong.statusCode).toBe(422);
    expect(tooLong.json()).toMatchObject({ field: 'id' });
  });

  it('resolves an uncertain effect whose key has 123 characters, and one of the longest key taken', async () => {
    const t = await testApp(backend);
    for (const type of ['n'.repeat(86), 't'.repeat(MAX_EFFECT_KEY_LENGTH - 37)]) {
      const eventId = randomUUID();
      const key = `${eventId}:${type}`;
      await t.db.query(
        `insert into "${t.schema}".effects (key, event_id, effect_type, state, run_id, on_failure, owner_token, error) values ($1, $2, $3, 'uncertain', 'live:x', 'keep', 0, 'timed out')`,
        [key, eventId, type],
      );
      const res = await t.post(`/ops/effects/${encodeURIComponent(key)}/resolve`, { as: 'done' });
      expect(res.statusCode, `${key.length}: ${res.body}`).toBe(200);
      expect(res.json()).toMatchObject({ key, before: 'uncertain', after: 'done' });
    }
    const over = await t.post(`/ops/effects/${randomUUID()}:${'t'.repeat(MAX_EFFECT_KEY_LENGTH - 36)}/resolve`, { as: 'done' });
    expect(over.statusCode).toBe(400);
    expect(over.json()).toMatchObject({ field: 'key' });
    const encoded = `${randomUUID()}:${'é'.repeat(60)}`;
    expect((await t.post(`/ops/effects/${encodeURIComponent(encoded)}/resolve`, { as: 'done' })).statusCode).toBe(404); // reached the route: no such effect
  });
});
