import { describe, expect, it } from 'vitest';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { startReconcileLoop } from '../../packages/rastro/src/processing/ledger/reconciler.js';
import { ORDER_NORMALIZER_POLICY } from '../../packages/rastro/src/intake/order-normalizer.js';
import { runRelay } from '../../packages/rastro/src/outbox/relay.js';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { postgresBackend } from '../support/databases.js';
import { auditWorld, brief } from '../support/audit-world.js';
import { TIPS_POLICY, tipsWorld } from '../support/ops-fixture.js';

const backend = postgresBackend();

/**
 * A busy deployment, every role running: tips and orders processed live, charges captured and
 * reconciled, deposits, the relay publishing. Audits taken meanwhile, incremental and full,
 * must find nothing: every concurrent write is either seen whole or not at all.
 */
describe.skipIf(!backend)('audits beside live traffic', () => {
  it('find nothing on a sound deployment while every role runs', async () => {
    const world = await auditWorld(backend!);
    const { store } = world;
    const runners = [
      await runLive(tipsWorld().processor, { store, policy: TIPS_POLICY, partitions: 2, pollIntervalMs: 20 }),
      await runLive(world.orders.normalizer, { store, policy: ORDER_NORMALIZER_POLICY, pollIntervalMs: 20 }),
      await runRelay({ store, publisher: createMemoryPublisher(), partitions: 2, pollIntervalMs: 20 }),
    ];
    const reconciler = await startReconcileLoop(store, { types: world.charges.effectTypes, intervalMs: 100 });
    let running = true;
    let written = 0;
    const account = world.ids.account;
    const load = async (write: (n: number) => Promise<unknown>) => {
      for (let n = 0; running; n++) {
        await write(n);
        written++;
      }
    };
    const loads = [
      load((n) => store.append(`tip-load-${n}`, [{ type: 'tip.paid', data: { cents: n } }])),
      load((n) => world.orders.intake.record('pied', 'webhook', { orderId: `load-${n % 20}`, status: n % 3 === 0 ? 'received' : 'requested', lastUpdate: new Date(Date.UTC(2026, 8, 8, 10, 0, n)).toISOString() })),
      load((n) => world.charges.start({ amountCents: 100 + n, customerId: `c-load-${n}` }, `load-key-${n}`)),
      load(() => world.ledger.deposit(account, 5)),
    ];
    const audits: string[][] = [];
    try {
      for (let i = 0; i < 6; i++) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        audits.push(brief(await world.audit({ full: i % 3 === 2 })));
      }
    } finally {
      running = false;
      await Promise.all(loads);
      for (const runner of runners) await runner.stop();
      await reconciler.stop();
    }
    expect(written).toBeGreaterThan(100);
    expect(audits).toEqual(audits.map(() => []));
  });
});
