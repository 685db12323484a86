import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Charge } from '../../packages/rastro/src/charges/charges.js';
import { backends } from '../support/databases.js';
import { chargeApp, chargesInEveryStatus } from '../support/charges.js';

const post = (app: FastifyInstance, url: string, body: unknown) =>
  app.inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

const REVIEW = { reviewAfterMs: 2_500, backoff: { initialMs: 100, maxMs: 400 } };

describe.each(backends())('charges in the operations API on $name', (backend) => {
  it('reports charges by status, stale PENDING ones and effects in review, as the database has them', async () => {
    const t = await chargeApp(backend, REVIEW);
    const seeded = await chargesInEveryStatus(t.services.store, t.charges, t.acquirer);
    const q = async (sql: string) => (await t.services.db.query<{ n: number }>(sql.replaceAll('S.', `"${t.schema}".`))).rows[0]!.n;
    const ofState = (state: string) => q(`select count(*)::int as n from S.effects where effect_type = 'charge.capture' and state in (${state})`);

    const figures = (await t.app.inject({ url: '/ops/figures' })).json();
    expect(figures.charges.byStatus).toEqual({
      PENDING: await ofState(`'reserved', 'uncertain'`), CAPTURED: await ofState(`'done'`), FAILED: await ofState(`'failed'`), NEEDS_REVIEW: await ofState(`'needs-review'`),
    });
    expect(figures.charges.byStatus).toEqual({ PENDING: 1, CAPTURED: 1, FAILED: 1, NEEDS_REVIEW: 1 });
    expect(figures.charges.stalePending).toMatchObject({ count: 1, deadlineSeconds: 1.2 });
    const ageOfPending = await q(`select extract(epoch from now() - reserved_at)::float8 as n from S.effects where key = 'charge:${seeded.pending.id}'`);
    expect(figures.charges.stalePending.oldestSeconds).toBeGreaterThanOrEqual(1.2);
    expect(figures.charges.stalePending.oldestSeconds).toBeLessThanOrEqual(ageOfPending);
    expect(figures.effectsNeedingReview).toEqual({ 'charge.capture': 1 });
    expect(figures.effects['needs-review']).toBe(1);

    const review = (await t.app.inject({ url: '/ops/charges?status=NEEDS_REVIEW' })).json();
    expect(review.counts).toEqual(figures.charges.byStatus);
    expect(review.stalePending).toMatchObject({ count: 1, deadlineSeconds: 1.2 });
    expect(review.charges).toEqual([seeded.review]);
    expect(review.charges[0]).toMatchObject({ amountCents: 25_000, customerId: 'customer-review', idempotencyKey: 'seed-review', status: 'NEEDS_REVIEW', reason: expect.stringContaining('past the business deadline') });
    const all = (await t.app.inject({ url: '/ops/charges' })).json<{ charges: Charge[] }>().charges;
    expect(all.map((c) => c.idempotencyKey)).toEqual(['seed-pending', 'seed-review', 'seed-declined', 'seed-captured']);
    expect((await t.app.inject({ url: '/ops/charges?status=PENDING&limit=1' })).json().charges.map((c: Charge) => c.id)).toEqual([seeded.pending.id]);
    expect((await t.app.inject({ url: '/ops/charges?limit=2' })).json().charges).toHaveLength(2);
  });

  it('settles a charge in review through its capture: captured or not captured, never released for retry', async () => {
    const t = await chargeApp(backend, REVIEW);
    const { review, pending } = await chargesInEveryStatus(t.services.store, t.charges, t.acquirer);
    const url = (charge: Charge) => `/ops/effects/${encodeURIComponent(`charge:${charge.id}`)}/resolve`;
    const before = await t.messages();

    const retry = await post(t.app, url(review), { as: 'retry' });
    expect(retry.statusCode).toBe(409);
    expect(retry.json()).toMatchObject({ code: 'RASTRO_EFFECT_STATE', detail: expect.stringContaining("request's path") });
    expect(await t.charges.get(review.id)).toMatchObject({ status: 'NEEDS_REVIEW' });
    expect(await t.messages()).toEqual(before);

    const captured = await post(t.app, url(review), { as: 'done' });
    expect(captured.statusCode).toBe(200);
    expect(captured.json()).toEqual({ key: `charge:${review.id}`, before: 'needs-review', after: 'done' });
    expect(await t.charges.get(review.id)).toMatchObject({ status: 'CAPTURED' });
    // The stale PENDING one (its capture uncertain), confirmed not captured by a person.
    const notCaptured = await post(t.app, url(pending), { as: 'failed' });
    expect(notCaptured.json()).toEqual({ key: `charge:${pending.id}`, before: 'uncertain', after: 'failed' });
    expect(await t.charges.get(pending.id)).toMatchObject({ status: 'FAILED', reason: 'a person confirmed it did not happen' });
    expect((await t.messages()).slice(before.length)).toEqual([
      { aggregateId: review.id, type: 'ChargeCaptured' },
      { aggregateId: pending.id, type: 'ChargeFailed' },
    ]);
    // Settled once: a second answer is refused and writes nothing.
    expect((await post(t.app, url(review), { as: 'failed' })).statusCode).toBe(409);
    expect(await t.messages()).toHaveLength(before.length + 2);

    const figures = (await t.app.inject({ url: '/ops/figures' })).json();
    expect(figures.charges).toEqual({ byStatus: { PENDING: 0, CAPTURED: 2, FAILED: 2, NEEDS_REVIEW: 0 }, stalePending: { count: 0, oldestSeconds: null, deadlineSeconds: 1.2 } });
    expect(figures.effectsNeedingReview).toEqual({ 'charge.capture': 0 });
  });

  it('answers bad charge queries with 400 naming the parameter', async () => {
    const t = await chargeApp(backend);
    const expectField = async (query: string, field: string) => {
      const res = await t.app.inject({ url: `/ops/charges?${query}` });
      expect(res.statusCode, query).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 400, field });
    };
    await expectField('status=LOST', 'status');
    await expectField('status=pending', 'status');
    await expectField('limit=0', 'limit');
    await expectField('limit=1001', 'limit');
    await expectField('limit=ten', 'limit');
    await expectField('since=yesterday', 'since');
    expect((await t.app.inject({ url: '/ops/charges' })).json()).toEqual({
      counts: { PENDING: 0, CAPTURED: 0, FAILED: 0, NEEDS_REVIEW: 0 }, stalePending: { count: 0, oldestSeconds: null, deadlineSeconds: 1.2 }, charges: [],
    });
  });
});
