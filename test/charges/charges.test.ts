import { describe, expect, it } from 'vitest';
import type { Charge } from '../../packages/rastro/src/charges/charges.js';
import { effectLedger } from '../../packages/rastro/src/processing/effect-admin.js';
import { reconcileEffects } from '../../packages/rastro/src/processing/ledger/reconciler.js';
import { backends } from '../support/databases.js';
import { chargeApp, sleep } from '../support/charges.js';

const body = { amountCents: 25_000, customerId: 'customer-1' };

describe.each(backends())('charges on $name', (backend) => {
  it('captures once: 201 CAPTURED, the events in the outbox, a retry replays without capturing', async () => {
    const t = await chargeApp(backend);
    const first = await t.charge(body, 'key-1');
    expect(first.statusCode).toBe(201);
    const charge = first.json<Charge>();
    expect(charge).toMatchObject({ status: 'CAPTURED', amountCents: 25_000, currency: 'BRL', customerId: 'customer-1', idempotencyKey: 'key-1' });
    expect(charge.captureId).toBe(t.acquirer.captures.get('key-1')!.captureId);
    expect(first.headers.location).toBe(`/charges/${charge.id}`);
    expect(await t.messages()).toEqual([
      { aggregateId: charge.id, type: 'ChargeStarted' },
      { aggregateId: charge.id, type: 'ChargeCaptured' },
    ]);

    const retry = await t.charge(body, 'key-1');
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toEqual(charge);
    expect(t.acquirer.stats.captureRequests).toBe(1);
    expect(await t.count('charges')).toBe(1);
    expect((await t.app.inject({ url: `/charges/${charge.id}` })).json()).toEqual(charge);
    expect((await t.app.inject({ url: '/charges?status=CAPTURED' })).json<{ charges: Charge[] }>().charges).toEqual([charge]);
    expect((await t.app.inject({ url: '/charges?status=PENDING' })).json<{ charges: Charge[] }>().charges).toEqual([]);
  });

  it('pages GET /charges with a cursor: every charge once, newest first, whatever is created meanwhile', async () => {
    const t = await chargeApp(backend);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.unshift((await t.charge({ ...body, amountCents: 100 + i }, `page-${i}`)).json<Charge>().id);
    const page = async (query: string) => (await t.app.inject({ url: `/charges?${query}` })).json<{ charges: Charge[]; next: string | null }>();
    const first = await page('limit=3');
    expect(first.charges.map((c) => c.id)).toEqual(ids.slice(0, 3));
    expect(first.next).toBe(ids[2]);
    // A charge created between two pages is newer than the cursor: it neither repeats nor shifts a page.
    expect((await t.charge({ ...body, amountCents: 999 }, 'page-meanwhile')).statusCode).toBe(201);
    const second = await page(`limit=3&after=${first.next}`);
    expect(second.charges.map((c) => c.id)).toEqual(ids.slice(3, 6));
    const last = await page(`limit=3&after=${second.next}`);
    expect(last).toEqual({ charges: [expect.objectContaining({ id: ids[6] })], next: null });
    expect((await page('status=CAPTURED&limit=8')).charges).toHaveLength(8);

    const unknown = await t.app.inject({ url: '/charges?after=00000000-0000-4000-8000-000000000000' });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json()).toMatchObject({ code: 'RASTRO_VALIDATION', field: 'after' });
    const malformed = await t.app.inject({ url: '/charges?after=yesterday' });
    expect(malformed.statusCode).toBe(422);
    expect(malformed.headers['content-type']).toContain('application/problem+json');
    expect(malformed.json()).toMatchObject({ field: 'after' });
  });

  it('a decline is FAILED with the acquirer\'s word and a ChargeFailed event', async () => {
    const t = await chargeApp(backend);
    t.acquirer.faults.push('decline');
    const res = await t.charge(body, 'declined');
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ status: 'FAILED', reason: expect.stringContaining('declined') });
    expect((await t.messages()).map((m) => m.type)).toEqual(['ChargeStarted', 'ChargeFailed']);
  });

  it.each(['capture-then-timeout', 'capture-then-500', 'capture-then-reset', 'fail-before'] as const)(
    'an ambiguous failure (%s) leaves the charge PENDING, never FAILED; a retry answers 202 without capturing',
    async (fault) => {
      const t = await chargeApp(backend);
      t.acquirer.faults.push(fault);
      const res = await t.charge(body, 'ambiguous');
      expect(res.statusCode).toBe(202);
      expect(res.json()).toMatchObject({ status: 'PENDING' });
      const retry = await t.charge(body, 'ambiguous');
      expect(retry.statusCode).toBe(202);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(t.acquirer.stats.captureRequests).toBe(1);
      expect((await t.messages()).map((m) => m.type)).toEqual(['ChargeStarted']);
    },
  );

  it('reconciliation asks after the deadline: a capture found is CAPTURED, one never made is captured again with the same key', async () => {
    const t = await chargeApp(backend);
    t.acquirer.faults.push('capture-then-500', 'fail-before');
    const captured = (await t.charge(body, 'made')).json<Charge>();
    const missing = (await t.charge({ ...body, amountCents: 100 }, 'not-made')).json<Charge>();
    expect([captured.status, missing.status]).toEqual(['PENDING', 'PENDING']);
    expect(t.acquirer.captures.has('not-made')).toBe(false);

    // Before the deadline nobody asks: a capture may still be on its way.
    expect((await reconcileEffects(t.services.store, { types: t.charges.effectTypes })).asked).toBe(0);
    expect((await t.charges.stalePending()).count).toBe(0);
    await sleep(1_300);
    expect((await t.charges.stalePending()).count).toBe(2);
    const report = await reconcileEffects(t.services.store, { types: t.charges.effectTypes });
    expect(report).toMatchObject({ asked: 2, happened: 1, redone: 1, failed: 0 });
    expect(await t.charges.get(captured.id)).toMatchObject({ status: 'CAPTURED', captureId: t.acquirer.captures.get('made')!.captureId });
    expect(await t.charges.get(missing.id)).toMatchObject({ status: 'CAPTURED', captureId: t.acquirer.captures.get('not-made')!.captureId });
    expect(t.acquirer.requestsFor.get('not-made')!.captures).toBe(2);
    expect(t.acquirer.captured()).toHaveLength(2);
    const messages = await t.messages();
    expect(messages.filter((m) => m.type === 'ChargeCaptured').map((m) => m.aggregateId).sort()).toEqual([captured.id, missing.id].sort());
    expect((await t.charges.stalePending()).count).toBe(0);
    // Settled: the next pass has nothing to ask.
    expect((await reconcileEffects(t.services.store, { types: t.charges.effectTypes })).asked).toBe(0);
  });

  it("under whenNotFound 'fail', a capture the acquirer never made is FAILED, with its confirmation", async () => {
    const t = await chargeApp(backend, { whenNotFound: 'fail' });
    t.acquirer.faults.push('fail-before');
    const charge = (await t.charge(body, 'never')).json<Charge>();
    await sleep(1_300);
    expect(await reconcileEffects(t.services.store, { types: t.charges.effectTypes })).toMatchObject({ asked: 1, failed: 1 });
    expect(await t.charges.get(charge.id)).toMatchObject({ status: 'FAILED', reason: 'the provider confirmed it did not happen' });
    expect(t.acquirer.stats.captureRequests).toBe(1);
    expect((await t.messages()).map((m) => m.type)).toEqual(['ChargeStarted', 'ChargeFailed']);
  });

  it('unknown is asked again with a growing backoff, then goes to review past the business deadline', async () => {
    const t = await chargeApp(backend, { reviewAfterMs: 2_500, backoff: { initialMs: 100, maxMs: 400 } });
    t.acquirer.faults.push('capture-then-500');
    t.acquirer.unknownLookups.set('*', 1_000);
    const charge = (await t.charge(body, 'unknown')).json<Charge>();
    await sleep(1_300);
    const first = await reconcileEffects(t.services.store, { types: t.charges.effectTypes });
    expect(first).toMatchObject({ asked: 1, unknown: 1 });
    // Backing off: asked again only after the wait.
    expect((await reconcileEffects(t.services.store, { types: t.charges.effectTypes })).asked).toBe(0);
    const [effect] = await effectLedger(t.services.store).list({ state: 'uncertain' });
    expect(effect!.checks).toBe(1);
    expect(effect!.checkAfter).not.toBeNull();
    expect(await t.charges.get(charge.id)).toMatchObject({ status: 'PENDING' });

    const deadline = Date.now() + 10_000;
    let status = 'PENDING';
    let askedAgain: typeof effect;
    while (status === 'PENDING' && Date.now() < deadline) {
      await reconcileEffects(t.services.store, { types: t.charges.effectTypes });
      status = (await t.charges.get(charge.id)).status;
      askedAgain ??= (await effectLedger(t.services.store).list({ state: 'uncertain' })).find((e) => e.checks > 1);
      await sleep(50);
    }
    // Each question moves the entry's last update, never the time it entered its state.
    expect(askedAgain!.updatedAt.getTime()).toBeGreaterThan(effect!.updatedAt.getTime());
    expect(askedAgain!.stateSince).toEqual(effect!.stateSince);
    expect(status).toBe('NEEDS_REVIEW');
    const inReview = await t.charges.get(charge.id);
    expect(new Date(inReview.statusSince).getTime()).toBeGreaterThan(new Date(inReview.createdAt).getTime());
    const asked = t.acquirer.requestsFor.get('unknown')!.lookups;
    // Doubling waits from 100 ms to 400 ms over about a second: a handful of questions, not one per poll.
    expect(asked).toBeGreaterThanOrEqual(3);
    expect(asked).toBeLessThan(10);
    expect((await t.messages()).map((m) => m.type)).toEqual(['ChargeStarted', 'ChargeNeedsReview']);
    // Never guessed: the acquirer has it captured, the charge is not CAPTURED or FAILED until someone confirms.
    expect(t.acquirer.captures.has('unknown')).toBe(true);

    // A person confirms the capture: CAPTURED, with its event, in one transaction.
    const ledger = effectLedger(t.services.store, { types: t.charges.effectTypes });
    await expect(ledger.resolve(`charge:${charge.id}`, 'retry')).rejects.toThrow(/request's path/);
    await ledger.resolve(`charge:${charge.id}`, 'done');
    expect(await t.charges.get(charge.id)).toMatchObject({ status: 'CAPTURED' });
    expect((await t.messages()).map((m) => m.type)).toEqual(['ChargeStarted', 'ChargeNeedsReview', 'ChargeCaptured']);
  });

  it('where the acquirer allows it, the deadline rule voids with the same key instead of review', async () => {
    const t = await chargeApp(backend, { reviewAfterMs: 1_200, onDeadline: 'void' });
    t.acquirer.faults.push('capture-then-timeout');
    t.acquirer.unknownLookups.set('*', 1_000);
    const charge = (await t.charge(body, 'to-void')).json<Charge>();
    await sleep(1_300);
    expect(await reconcileEffects(t.services.store, { types: t.charges.effectTypes })).toMatchObject({ asked: 1, failed: 1 });
    expect(await t.charges.get(charge.id)).toMatchObject({ status: 'FAILED', reason: 'voided with the same key at the business deadline' });
    expect(t.acquirer.captured()).toHaveLength(0);
  });

  it('two reconcilers at once take different rows', async () => {
    const t = await chargeApp(backend, {}, { lookupDelayMs: 30 });
    for (let i = 0; i < 24; i++) t.acquirer.faults.push('capture-then-500');
    for (let i = 0; i < 24; i++) expect((await t.charge({ ...body, amountCents: 100 + i }, `k-${i}`)).statusCode).toBe(202);
    await sleep(1_300);
    const reports = await Promise.all([1, 2, 3].map(() => reconcileEffects(t.services.store, { types: t.charges.effectTypes, limit: 24, once: true })));
    expect(reports.reduce((sum, r) => sum + r.asked, 0)).toBe(24);
    expect(reports.reduce((sum, r) => sum + r.settledMeanwhile, 0)).toBe(0);
    for (let i = 0; i < 24; i++) expect(t.acquirer.requestsFor.get(`k-${i}`)!.lookups).toBe(1);
    expect((await t.charges.list({ status: 'CAPTURED' })).length).toBe(24);
    expect((await t.messages()).filter((m) => m.type === 'ChargeCaptured')).toHaveLength(24);
  });
});
