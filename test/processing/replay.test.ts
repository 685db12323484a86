import { describe, expect, it } from 'vitest';
import { commissionCents, commissionProcessor } from '../../packages/server/src/demo/commission.js';
import { sellerNotifierClient } from '../../packages/server/src/demo/seller-notifier.js';
import { effectLedger } from '../../packages/rastro/src/processing/effect-admin.js';
import { parkedEvents } from '../../packages/rastro/src/processing/parking.js';
import { defineProcessor, type HandlerContext } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { runDiff } from '../../packages/rastro/src/processing/run-diff.js';
import { backends } from '../support/databases.js';
import { notifierForFile } from '../support/notifier.js';
import { commissions, makeOrders, payOrders } from '../support/orders.js';

const apply = { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } as const;
const applyDedup = { 'notify-seller': { mode: 'apply', onFailure: 'release' } } as const;

const files = notifierForFile();
const storeOn = files.storeOn;

describe.each(backends())('replay on $name', (backend) => {
  it('writes state and applies each effect once; a second run finds every effect already recorded', async () => {
    const store = await storeOn(backend);
    const orders = makeOrders(30);
    await payOrders(store, orders);
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    const first = await runReplay(processor, { store, runId: 'r1', policy: apply, batchSize: 7 });
    expect(first.counters).toMatchObject({ events: 30, applied: 30, written: 30 });
    expect(files.notifier().sent).toHaveLength(30);
    const stored = await commissions(store);
    for (const order of orders) expect(stored.get(order.orderId)).toEqual({ commissionCents: commissionCents(order.amountCents, order.percent), version: 1 });

    const second = await runReplay(processor, { store, runId: 'r2', policy: apply });
    expect(second.counters).toMatchObject({ events: 30, 'already-recorded': 30 });
    expect(second.counters.applied).toBeUndefined();
    expect(files.notifier().sent).toHaveLength(30);
    expect((await effectLedger(store).list({ state: 'done' })).map((e) => e.key).sort()).toEqual(
      (await store.readAll()).map((event) => `${event.id}:notify-seller`).sort(),
    );
  });

  it('suppresses and counts an effect type the policy does not name; never applies by default', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(5));
    const summary = await runReplay(commissionProcessor(sellerNotifierClient(files.notifier().url)), { store, policy: {} });
    expect(summary.counters).toMatchObject({ suppressed: 5, written: 5 });
    expect(files.notifier().sent).toHaveLength(0);
    expect(await effectLedger(store).list()).toEqual([]);
  });

  it('simulates: no state, no effects, a diff per key skipping newer versions, effects counted', async () => {
    const store = await storeOn(backend);
    const orders = makeOrders(6);
    await payOrders(store, orders);
    const buggy = commissionProcessor(sellerNotifierClient(files.notifier().url), { divisor: 1000 });
    await runReplay(buggy, { store, runId: 'live-ish', policy: apply, toPosition: (await store.readAll())[3]!.position });
    // Version 2 of order o5 arrives: the replay must not propose to overwrite it.
    await store.append('order-o5', [{ type: 'order.paid', data: { ...orders[5]!, amountCents: 99_999 } }]);
    await runReplay(buggy, { store, runId: 'live-v2', policy: apply, fromPosition: (await store.readAll()).at(-1)!.position });
    const before = await commissions(store);
    const sentBefore = files.notifier().sent.length;

    const fixed = commissionProcessor(sellerNotifierClient(files.notifier().url));
    const summary = await runReplay(fixed, { store, runId: 'sim', policy: apply, simulate: true, to: new Date('2026-10-15T00:00:00Z') });
    expect(await commissions(store)).toEqual(before);
    expect(files.notifier().sent.length).toBe(sentBefore);
    expect(summary.counters).toMatchObject({ 'already-recorded': 4, 'would-apply': 2 });
    const diff = await runDiff(store, 'sim');
    expect(diff.map((row) => row.key)).toEqual(['o0', 'o1', 'o2', 'o3', 'o4']);
    for (const row of diff) {
      const order = orders.find((o) => o.orderId === row.key)!;
      expect(row.after).toEqual({ orderId: order.orderId, commissionCents: commissionCents(order.amountCents, order.percent) });
      if (row.key === 'o4') expect(row.before).toBeNull();
      else expect(row.before).toEqual({ orderId: order.orderId, commissionCents: commissionCents(order.amountCents, order.percent, 1000) });
    }
  });

  it('records no diff when simulating the code that wrote the state, and rewrites nothing on a real rerun', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(8));
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    await runReplay(processor, { store, runId: 'first', policy: apply });
    const summary = await runReplay(processor, { store, runId: 'same-code', policy: apply, simulate: true });
    expect(summary.counters).toMatchObject({ 'already-recorded': 8 });
    expect(await runDiff(store, 'same-code')).toEqual([]);
    const before = (await store.db.query<{ updated_at: Date }>(`select updated_at from "${store.schema}".projections order by key`)).rows;
    const rerun = await runReplay(processor, { store, runId: 'rerun', policy: apply });
    expect(rerun.counters).toMatchObject({ written: 8, 'already-recorded': 8 });
    expect((await store.db.query<{ updated_at: Date }>(`select updated_at from "${store.schema}".projections order by key`)).rows).toEqual(before);
  });

  it('never overwrites state written by a newer version, and counts it', async () => {
    const store = await storeOn(backend);
    const [order] = makeOrders(1);
    await store.append('order-o0', [
      { type: 'order.paid', data: { ...order! } },
      { type: 'order.paid', data: { ...order!, amountCents: 50_000 } },
    ]);
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    await runReplay(processor, { store, runId: 'v2-first', policy: {}, fromPosition: (await store.readAll())[1]!.position });
    const summary = await runReplay(processor, { store, runId: 'v1-later', policy: {}, toPosition: (await store.readAll())[0]!.position });
    expect(summary.counters).toMatchObject({ 'ignored-newer-version': 1 });
    expect((await commissions(store)).get('o0')).toEqual({ commissionCents: commissionCents(50_000, order!.percent), version: 2 });
  });

  it('marks an effect uncertain when a non-deduplicating provider fails after sending, and resolve clears it', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(3));
    files.notifier().behaviour.failNext = { when: 'after-send', count: 1 };
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    const summary = await runReplay(processor, { store, runId: 'u1', policy: apply, effectConcurrency: 1 });
    expect(summary.counters).toMatchObject({ applied: 2, uncertain: 1 });
    expect(files.notifier().sent).toHaveLength(3);
    const effects = effectLedger(store);
    const [uncertain] = await effects.list({ state: 'uncertain' });
    expect(uncertain).toMatchObject({ effectType: 'notify-seller', onFailure: 'keep' });

    // A new run does not send it again: it left the automatic flow.
    await runReplay(processor, { store, runId: 'u2', policy: apply });
    expect(files.notifier().sent).toHaveLength(3);

    await effects.resolve(uncertain!.key, 'retry');
    await runReplay(processor, { store, runId: 'u3', policy: apply });
    expect(files.notifier().sent).toHaveLength(4);
    expect(await effects.list({ state: 'uncertain' })).toEqual([]);
    await expect(effects.resolve(uncertain!.key, 'done')).rejects.toMatchObject({ code: 'RASTRO_EFFECT_STATE' });
  });

  it('releases the reservation when a deduplicating provider fails, parks the event, and a retry sends it', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(2));
    files.notifier().behaviour.failNext = { when: 'before-send', count: 1 };
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    const summary = await runReplay(processor, { store, runId: 'rel', policy: applyDedup, effectConcurrency: 1 });
    expect(summary.counters).toMatchObject({ applied: 1, 'released-after-failure': 1, parked: 1 });
    expect(await effectLedger(store).list({ state: 'reserved' })).toEqual([]);
    const parked = parkedEvents(store);
    const [event] = await parked.list({ runId: 'rel' });
    expect(event).toMatchObject({ reason: 'failed', error: expect.stringContaining('503') });
    expect(await parked.retry(processor, event!.eventId)).toEqual({ handled: 1, stillParked: 0, alreadyDone: [] });
    expect(files.notifier().sent).toHaveLength(2);
    expect(await parked.list({ runId: 'rel' })).toEqual([]);
  });

  it('takes over a reservation its read found still reserved, abandoned since the run started', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(8));
    const events = await store.readAll();
    const last = events.at(-1)!;
    const calls: string[] = [];
    // While the first event is handled (after the run's start swept abandoned reservations, before
    // the last event is read), another runner reserves the last event's effect and is gone.
    const processor = defineProcessor({
      name: 'commissions',
      handlers: {
        'order.paid': async (event, ctx) => {
          if (event.id === events[0]!.id) {
            await store.db.query(
              `insert into "${store.schema}".effects (key, event_id, effect_type, state, run_id, on_failure, owner_token, reserved_at)
               values ($1, $2, 'notify-seller', 'reserved', 'gone', 'release', 777, now() - interval '1 hour')`,
              [`${last.id}:notify-seller`, last.id],
            );
          }
          await ctx.effect('notify-seller', async (key) => calls.push(key));
        },
      },
    });
    const summary = await runReplay(processor, { store, runId: 'takes-over', policy: applyDedup, batchSize: 1 });
    // Counted as recorded from the read, the entry would have kept the effect from ever happening.
    expect(summary.counters).toMatchObject({ events: 8, applied: 8 });
    expect(summary.counters['already-recorded']).toBeUndefined();
    expect(calls).toContain(`${last.id}:notify-seller`);
    expect((await effectLedger(store).list({ state: 'done' })).map((e) => e.key).sort()).toEqual(events.map((e) => `${e.id}:notify-seller`).sort());
  });

  it('refuses an effect asked after ctx.tx, though the ledger already records it', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(3));
    const notify = (ctx: HandlerContext) => ctx.effect('notify-seller', async (key) => ({ delivered: key }));
    const first = defineProcessor({ name: 'commissions', handlers: { 'order.paid': async (_event, ctx) => void (await notify(ctx)) } });
    expect((await runReplay(first, { store, runId: 'records', policy: apply })).counters).toMatchObject({ applied: 3 });
    // The same handler with its effect after a statement in the batch's transaction: refused
    // whatever the ledger holds, so a handler does not pass on a replay and fail on its first run.
    const late = defineProcessor({
      name: 'commissions',
      handlers: {
        'order.paid': async (_event, ctx) => {
          await ctx.tx.query('select 1');
          await notify(ctx);
        },
      },
    });
    const summary = await runReplay(late, { store, runId: 'late', policy: apply });
    expect(summary.counters).toMatchObject({ events: 3, parked: 3 });
    expect(summary.counters['already-recorded']).toBeUndefined();
    const parked = await parkedEvents(store).list({ runId: 'late' });
    expect(parked.map((event) => event.error)).toEqual(Array(3).fill(expect.stringContaining('ask for effects first')));
  });

  it('continues a run id from its checkpoint', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(10));
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    const seen: number[] = [];
    await runReplay(processor, { store, runId: 'again', policy: apply, batchSize: 4, toPosition: (await store.readAll())[5]!.position, onProgress: (p) => seen.push(p.done) });
    const summary = await runReplay(processor, { store, runId: 'again', policy: apply, batchSize: 4 });
    expect(summary.counters).toMatchObject({ events: 10, applied: 10 });
    expect(files.notifier().sent).toHaveLength(10);
  });

  it('holds a stream parked in one batch back in the next, though that batch was read before the park', async () => {
    const store = await storeOn(backend);
    const handled: string[] = [];
    const processor = defineProcessor({
      name: 'picky',
      handlers: {
        'order.paid': async (event, ctx) => {
          if (event.data.orderId === 'bad') throw new Error('cannot handle this order');
          handled.push(String(event.data.orderId));
          await ctx.upsert('seen', event.streamId, { v: event.streamVersion }, { version: event.streamVersion });
        },
      },
    });
    // Batches of two: the stream's second event is in the batch read ahead while the first is parked.
    await store.append('order-bad', [{ type: 'order.paid', data: { orderId: 'bad' } }]);
    await store.append('order-a', [{ type: 'order.paid', data: { orderId: 'a' } }]);
    await store.append('order-bad', [{ type: 'order.paid', data: { orderId: 'bad-later' } }]);
    await store.append('order-b', [{ type: 'order.paid', data: { orderId: 'b' } }]);
    const summary = await runReplay(processor, { store, runId: 'held', policy: {}, batchSize: 2 });
    expect(summary.counters).toMatchObject({ events: 4, parked: 2 });
    expect(handled).toEqual(['a', 'b']);
    const parked = await parkedEvents(store).list({ runId: 'held' });
    expect(parked.map((p) => p.reason)).toEqual(['failed', 'waiting']);
  });

  it('rejects a bad policy, run id or window before touching anything', async () => {
    const store = await storeOn(backend);
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    await expect(runReplay(processor, { store, policy: { x: { mode: 'always' } } as never })).rejects.toMatchObject({ field: 'policy.x.mode' });
    await expect(runReplay(processor, { store, policy: {}, runId: 'live:x' })).rejects.toMatchObject({ field: 'runId' });
    await expect(runReplay(processor, { store, policy: {}, from: new Date('2026-01-02'), to: new Date('2026-01-01') })).rejects.toMatchObject({ field: 'to' });
  });
});
