import { describe, expect, it } from 'vitest';
import { postgresBackend } from '../support/databases.js';
import { ordersOn } from '../support/order-intake.js';

const backend = postgresBackend();

describe.skipIf(!backend)('a snapshot whose transaction commits late, on PostgreSQL', () => {
  it('is normalized after the rounds it was held open through, and nothing after it is lost', async () => {
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
    await inTransaction;
    // Snapshots of another order commit meanwhile, with later capture times.
    await deliver('webhook', { orderId: '2', status: 'received', lastUpdate: '2026-09-08T10:06:00.000Z' }, '2026-09-08T10:06:01Z');
    const rounds: number[] = [];
    for (let round = 0; round < 5; round++) rounds.push((await orders.normalizeRound()).events);
    // Order 2's snapshot sorts after the open transaction: no round may pass it yet.
    expect(rounds).toEqual([0, 0, 0, 0, 0]);
    expect((await orders.get('pied:1')).state).toMatchObject({ status: 'requested' });
    commit();
    await late;
    expect((await orders.normalizeRound()).events).toBe(2);
    expect((await orders.get('pied:1')).state).toMatchObject({ status: 'received', paidAt: '2026-09-08T10:05:00.000Z' });
    expect((await orders.get('pied:2')).state).toMatchObject({ status: 'received' });
  });
});
