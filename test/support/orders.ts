import type { EventStore } from '../../packages/rastro/src/store/event-store.js';

export interface Order {
  orderId: string;
  amountCents: number;
  percent: number;
}

/** Appends one `order.paid` event per order (version 1), at `occurredAt`, in order. */
export async function payOrders(store: EventStore, orders: Order[], occurredAt = new Date('2026-10-14T12:00:00Z')): Promise<void> {
  for (const order of orders) await store.append(`order-${order.orderId}`, [{ type: 'order.paid', data: { ...order }, occurredAt }]);
}

export function makeOrders(count: number, prefix = 'o'): Order[] {
  return Array.from({ length: count }, (_, i) => ({ orderId: `${prefix}${i}`, amountCents: 10_000 + i * 37, percent: 5 + (i % 7) }));
}

export async function commissions(store: EventStore): Promise<Map<string, { commissionCents: number; version: number }>> {
  const { rows } = await store.db.query<{ key: string; doc: { commissionCents: number }; version: number }>(
    `select key, doc, version from "${store.schema}".projections where projection = 'commission'`,
  );
  return new Map(rows.map((row) => [row.key, { commissionCents: row.doc.commissionCents, version: row.version }]));
}
