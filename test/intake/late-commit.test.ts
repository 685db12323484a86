import { describe, expect, it } from 'vitest';
import { ORDER_NORMALIZER_POLICY } from '../../packages/rastro/src/intake/order-normalizer.js';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { postgresBackend } from '../support/databases.js';
import { ordersOn } from '../support/order-intake.js';

const backend = postgresBackend();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!backend)('a snapshot whose transaction commits late, on PostgreSQL', () => {
  it('is normalized after the rounds it was held open through, and nothing committed after it is passed', async () => {
    const { orders, store, deliver } = await ordersOn(backend!);
    await deliver('webhook', { orderId: '1', status: 'requested', lastUpdate: '2026-09-08T10:00:00.000Z' }, '2026-09-08T10:00:01Z');
    await orders.normalizeRound();
    let commit!: () => void;
    const held = new Promise<void>((resolve) => (commit = resolve));
    let recorded!: () => void;
    const inTransaction = new Promise<void>((resolve) => (recorded = resolve));
    const late = store.db.transaction(async (tx) => {
      await orders.intake.record('pied', 'webhook', { orderId: '1', status: 'received', lastUpdate: '2026-09-08T10:05:00.000Z' }, { tx, capturedAt: new Date('2026-09-08T10:05:01Z') });
      recorded();
      await held;
    });
    try {
      await inTransaction;
      // A snapshot of another order commits meanwhile, with a later capture time.
      await deliver('webhook', { orderId: '2', status: 'received', lastUpdate: '2026-09-08T10:06:00.000Z' }, '2026-09-08T10:06:01Z');
      // The live normalizer polls every 20 ms: dozens of rounds while the transaction is open.
      const live = await runLive(orders.normalizer, { store, policy: ORDER_NORMALIZER_POLICY, pollIntervalMs: 20 });
      const round = orders.normalizeRound();
      await sleep(1000);
      await live.stop();
      // Order 2's snapshot sorts after the open transaction: no round may pass it, and the round
      // started meanwhile waits for it instead of ending without it.
      expect(live.counters.get('events')).toBe(0);
      expect((await orders.get('pied:1')).state).toMatchObject({ status: 'requested' });
      expect((await orders.get('pied:2')).state).toBeNull();
      const ended = await Promise.race([round.then(() => true), sleep(50).then(() => false)]);
      expect(ended).toBe(false);
      commit();
      await late;
      expect((await round).events).toBe(2);
    } finally {
      commit();
      await late.catch(() => undefined);
    }
    expect((await orders.get('pied:1')).state).toMatchObject({ status: 'received', paidAt: '2026-09-08T10:05:00.000Z' });
    expect((await orders.get('pied:2')).state).toMatchObject({ status: 'received' });
  });
});
