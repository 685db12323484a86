import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { commissionProcessor, NOTIFY_SELLER } from '../../packages/server/src/demo/commission.js';
import { sellerNotifierClient } from '../../packages/server/src/demo/seller-notifier.js';
import { effectLedger } from '../../packages/rastro/src/processing/effect-admin.js';
import type { EffectType } from '../../packages/rastro/src/processing/ledger/effect-type.js';
import { Reconciler, reconcileEffects } from '../../packages/rastro/src/processing/ledger/reconciler.js';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { openRunnerSession } from '../../packages/rastro/src/processing/runner-session.js';
import { processingSql } from '../../packages/rastro/src/processing/sql.js';
import type { EventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends } from '../support/databases.js';
import { notifierForFile } from '../support/notifier.js';
import { makeOrders, payOrders } from '../support/orders.js';

const keep = { [NOTIFY_SELLER]: { mode: 'apply', onFailure: 'keep' } } as const;
const files = notifierForFile();

/** An effect entry as a runner leaves it: reserved by `ownerToken`, or uncertain. */
async function entry(store: EventStore, state: 'reserved' | 'uncertain', options: { ownerToken?: number; type?: string; ageMs?: number } = {}): Promise<string> {
  const eventId = randomUUID();
  const key = `${eventId}:${options.type ?? 'probe'}`;
  await store.db.query(
    `insert into "${store.schema}".effects (key, event_id, effect_type, state, run_id, on_failure, owner_token, reserved_at)
     values ($1, $2, $3, $4, 'live:test', 'keep', $5, now() - $6 * interval '1 millisecond')`,
    [key, eventId, options.type ?? 'probe', state, options.ownerToken ?? 123_456_789, options.ageMs ?? 1_000],
  );
  return key;
}

async function stateOf(store: EventStore, key: string): Promise<string | undefined> {
  const { rows } = await store.db.query<{ state: string }>(`select state from "${store.schema}".effects where key = $1`, [key]);
  return rows[0]?.state;
}

function probe(answers: Record<string, 'happened' | 'did-not-happen' | 'unknown' | 'throw' | 'garbage'>, extra: Partial<EffectType> = {}) {
  const asked: string[] = [];
  const type: EffectType = {
    settleMs: 0,
    ...extra,
    async reconcile(key) {
      asked.push(key);
      const answer = answers[key] ?? 'unknown';
      if (answer === 'throw') throw new Error('lookup failed');
      if (answer === 'garbage') return { status: 'maybe' } as never;
      return answer === 'happened' ? { status: 'happened', result: { id: 'p-1' } } : { status: answer };
    },
  };
  return { type, asked };
}

describe.each(backends())('reconciliation of processor effects on $name', (backend) => {
  it('settles by the answer: happened → done with the result, did not happen → released, unknown → backoff', async () => {
    const store = await files.storeOn(backend);
    const [a, b, c, d, e] = [await entry(store, 'uncertain'), await entry(store, 'uncertain'), await entry(store, 'uncertain'), await entry(store, 'uncertain'), await entry(store, 'uncertain')];
    const { type, asked } = probe({ [a]: 'happened', [b]: 'did-not-happen', [c]: 'unknown', [d]: 'throw', [e]: 'garbage' });
    const report = await reconcileEffects(store, { types: { probe: type } });
    expect(report).toMatchObject({ asked: 5, happened: 1, released: 1, unknown: 3, failed: 0, review: 0 });
    expect(asked.sort()).toEqual([a, b, c, d, e].sort());
    const effects = new Map((await effectLedger(store).list()).map((effect) => [effect.key, effect]));
    expect(effects.get(a)).toMatchObject({ state: 'done', result: { id: 'p-1' } });
    expect(effects.has(b)).toBe(false);
    for (const key of [c, d, e]) expect(effects.get(key)).toMatchObject({ state: 'uncertain', checks: 1, checkAfter: expect.any(Date) });
    expect(effects.get(d)!.error).toContain('lookup failed');
    expect(effects.get(e)!.error).toContain('not understood');
  });

  it('asks no earlier than settleMs, and leaves a live owner\'s reservation alone until its lease', async () => {
    const store = await files.storeOn(backend);
    const runner = await openRunnerSession(store.db, processingSql(`"${store.schema}"`));
    try {
      const young = await entry(store, 'uncertain', { ageMs: 0 });
      const live = await entry(store, 'reserved', { ownerToken: runner.token, ageMs: 10_000 });
      const dead = await entry(store, 'reserved', { ageMs: 10_000 });
      const { type, asked } = probe({ [young]: 'happened', [live]: 'happened', [dead]: 'happened' }, { settleMs: 5_000 });
      await reconcileEffects(store, { types: { probe: type }, leaseMs: 60_000 });
      // The dead owner's reservation is old enough; the young one may still be on its way; the live owner may still be calling.
      expect(asked).toEqual([dead]);
      await reconcileEffects(store, { types: { probe: type }, leaseMs: 5_000 });
      expect(asked.sort()).toEqual([dead, live].sort());
      expect(await stateOf(store, young)).toBe('uncertain');
    } finally {
      await runner.close();
    }
  });

  it("under 'fail' a confirmed miss is failed; past the deadline an unknown goes to review; types without reconcile are not touched", async () => {
    const store = await files.storeOn(backend);
    const missed = await entry(store, 'uncertain');
    const old = await entry(store, 'uncertain', { ageMs: 60_000 });
    const other = await entry(store, 'uncertain', { type: 'not-askable' });
    const { type } = probe({ [missed]: 'did-not-happen', [old]: 'unknown' }, { whenNotHappened: 'fail', reviewAfterMs: 30_000 });
    expect(await reconcileEffects(store, { types: { probe: type } })).toMatchObject({ asked: 2, failed: 1, review: 1 });
    expect([await stateOf(store, missed), await stateOf(store, old), await stateOf(store, other)]).toEqual(['failed', 'needs-review', 'uncertain']);
    // A person takes it from review.
    await effectLedger(store).resolve(old, 'retry');
    expect(await stateOf(store, old)).toBeUndefined();
  });


  it('asks an unknown again just past the business deadline, however long its backoff, and sends it to review then', async () => {
    const store = await files.storeOn(backend);
    // Reserved 1 s ago, due for review at 3 s; its backoff would wait 10 minutes.
    const key = await entry(store, 'uncertain', { ageMs: 1_000 });
    const { type, asked } = probe({}, { reviewAfterMs: 3_000, backoff: { initialMs: 600_000, maxMs: 600_000 } });
    expect(await reconcileEffects(store, { types: { probe: type } })).toMatchObject({ asked: 1, unknown: 1 });
    const { rows } = await store.db.query<{ wait: number }>(
      `select extract(epoch from check_after - reserved_at) * 1000 as wait from "${store.schema}".effects where key = $1`,
      [key],
    );
    expect(Number(rows[0]!.wait)).toBeGreaterThan(3_000);
    expect(Number(rows[0]!.wait)).toBeLessThan(3_100);
    await new Promise((resolve) => setTimeout(resolve, 2_200));
    expect(await reconcileEffects(store, { types: { probe: type } })).toMatchObject({ asked: 1, review: 1 });
    expect(asked).toEqual([key, key]);
    expect(await stateOf(store, key)).toBe('needs-review');
  });

  it('asks again after a failed redo no sooner than the settle time, even past the business deadline', async () => {
    const store = await files.storeOn(backend);
    const key = await entry(store, 'uncertain', { ageMs: 10_000 });
    let redone = 0;
    const type: EffectType = {
      settleMs: 5_000,
      reviewAfterMs: 1_000,
      backoff: { initialMs: 1, maxMs: 1 },
      whenNotHappened: 'redo',
      reconcile: async () => ({ status: 'did-not-happen' }),
      redo: async () => {
        redone++;
        throw new Error('timed out');
      },
    };
    expect(await reconcileEffects(store, { types: { probe: type } })).toMatchObject({ asked: 1, unknown: 1 });
    expect(redone).toBe(1);
    const { rows } = await store.db.query<{ wait: number }>(`select extract(epoch from check_after - now()) * 1000 as wait from "${store.schema}".effects where key = $1`, [key]);
    expect(Number(rows[0]!.wait)).toBeGreaterThan(4_500);
  });

  it('a reconciler that dies frees its claims at once; a live one keeps them', async () => {
    const store = await files.storeOn(backend);
    const key = await entry(store, 'uncertain');
    const sql = processingSql(`"${store.schema}"`);
    const holder = await openRunnerSession(store.db, sql);
    const { type, asked } = probe({ [key]: 'happened' });
    // A claim by a live reconciler, as if it were asking the provider now.
    await store.db.query(`update "${store.schema}".effects set checked_by = $2 where key = $1`, [key, holder.token]);
    expect((await new Reconciler(store, { types: { probe: type } }).pass(999))).toMatchObject({ asked: 0 });
    // Its session ends (on PGlite, its lock is released): the claim is free.
    await holder.close();
    expect(await reconcileEffects(store, { types: { probe: type } })).toMatchObject({ asked: 1, happened: 1 });
    expect(asked).toEqual([key]);
  });

  it('a live runner settles its uncertain notifications by asking the provider: nothing left for review, nothing sent twice', async () => {
    const store = await files.storeOn(backend);
    const notifier = files.notifier();
    const processor = commissionProcessor(sellerNotifierClient(notifier.url, { timeoutMs: 500 }), { askProvider: true, settleMs: 600 });
    notifier.behaviour.failNext = { when: 'after-send', count: 2 };
    await payOrders(store, makeOrders(6, 'r'));
    const live = await runLive(processor, { store, policy: keep, pollIntervalMs: 50, reconcileIntervalMs: 100 });
    try {
      const start = Date.now();
      while (Date.now() - start < 15_000) {
        const open = (await effectLedger(store).list()).filter((effect) => effect.state !== 'done');
        if (notifier.sent.length >= 6 && open.length === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await live.stop();
    }
    const effects = await effectLedger(store).list();
    expect(effects).toHaveLength(6);
    expect(effects.every((effect) => effect.state === 'done')).toBe(true);
    // The two that failed after sending were found sent: none was sent again.
    const perKey = new Map<string, number>();
    for (const n of notifier.sent) perKey.set(n.idempotencyKey!, (perKey.get(n.idempotencyKey!) ?? 0) + 1);
    expect([...perKey.values()]).toEqual([1, 1, 1, 1, 1, 1]);
  });

  it('a released effect is performed by the next run that reaches its event', async () => {
    const store = await files.storeOn(backend);
    const notifier = files.notifier();
    const processor = commissionProcessor(sellerNotifierClient(notifier.url, { timeoutMs: 5_000 }), { askProvider: true, settleMs: 0 });
    // Fails before sending, but the caller cannot tell: uncertain, and the provider never got it.
    notifier.behaviour.failNext = { when: 'before-send', count: 1 };
    await payOrders(store, makeOrders(2, 'x'));
    await runReplay(processor, { store, runId: 'first', policy: keep });
    expect(notifier.sent).toHaveLength(1);
    expect(await reconcileEffects(store, { types: processor.effects! })).toMatchObject({ asked: 1, released: 1 });
    await runReplay(processor, { store, runId: 'second', policy: keep });
    expect(notifier.sent).toHaveLength(2);
    expect(new Set(notifier.sent.map((n) => n.orderId)).size).toBe(2);
  });

  it('refuses an effect type without a reconcile function or with redo but no redo()', () => {
    expect(() => defineProcessor({ name: 'p', handlers: { x: async () => undefined }, effects: { e: { settleMs: 10 } as never } })).toThrow(/effects\.e\.reconcile/);
    expect(() => defineProcessor({ name: 'p', handlers: { x: async () => undefined }, effects: { e: { reconcile: async () => ({ status: 'unknown' }), whenNotHappened: 'redo' } } })).toThrow(/effects\.e\.redo/);
  });
});
