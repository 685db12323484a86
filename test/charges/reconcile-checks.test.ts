import { describe, expect, it } from 'vitest';
import type { Charge } from '../../packages/rastro/src/charges/charges.js';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { effectLedger } from '../../packages/rastro/src/processing/effect-admin.js';
import type { EffectType } from '../../packages/rastro/src/processing/ledger/effect-type.js';
import { reconcileEffects, Reconciler } from '../../packages/rastro/src/processing/ledger/reconciler.js';
import { openRunnerSession } from '../../packages/rastro/src/processing/runner-session.js';
import { processingSql } from '../../packages/rastro/src/processing/sql.js';
import { backends } from '../support/databases.js';
import { chargeApp, sleep } from '../support/charges.js';
import { eventually } from '../support/eventually.js';

describe.each(backends())('reconciliation checks on $name', (backend) => {
  it('a reconciler that dies mid-pass counts no question it did not ask, so crashes never stretch the backoff', async () => {
    const t = await chargeApp(backend);
    const keys = ['first', 'second', 'third'];
    for (const key of keys) {
      t.acquirer.faultsFor.set(key, ['capture-then-500']);
      expect((await t.charge({ amountCents: 100, customerId: 'c-1' }, key)).json<Charge>().status).toBe('PENDING');
    }
    await sleep(1_300);

    // A reconciler claims all three, asks about one at a time, and dies while the first question is unanswered.
    const session = await openRunnerSession(t.services.db, processingSql(quoteSchema(t.schema)));
    let asking = 0;
    let dieNow!: () => void;
    const died = new Promise<void>((resolve) => (dieNow = resolve));
    const dying: EffectType = {
      ...t.charges.effectType,
      async reconcile() {
        asking++;
        await died;
        throw new Error('the reconciler died');
      },
    };
    const pass = new Reconciler(t.services.store, { types: { 'charge.capture': dying }, concurrency: 1 }).pass(session.token);
    await eventually(() => asking === 1, 'the first question');
    await session.close();
    const ledger = effectLedger(t.services.store);
    const unsettled = await ledger.list({ state: 'uncertain' });
    expect(unsettled).toHaveLength(3);
    // Claimed, never answered: nothing was asked, and nothing is counted.
    expect(unsettled.map((effect) => effect.checks)).toEqual([0, 0, 0]);

    // The next reconciler takes them at once (the claimant is gone) and asks each once.
    expect(await reconcileEffects(t.services.store, { types: t.charges.effectTypes })).toMatchObject({ asked: 3, happened: 3 });
    dieNow();
    expect(await pass).toMatchObject({ asked: 3, settledMeanwhile: 3 });
    const settled = await ledger.list({ state: 'done' });
    expect(settled).toHaveLength(3);
    for (const effect of settled) expect(effect.checks).toBe(1);
    for (const key of keys) expect(t.acquirer.requestsFor.get(key)!.lookups).toBe(1);
  });
});
