/** An `order.paid` event's data: the order, its amount, and the seller's commission percent. */
export interface PaidOrder {
  orderId: string;
  amountCents: number;
  percent: number;
}

/** The day the buggy release handled, and the day after (the revisions and new orders). */
export const DAY_FROM = new Date('2026-10-14T00:00:00Z');
export const DAY_TO = new Date('2026-10-15T00:00:00Z');
export const NEXT_DAY = new Date('2026-10-15T09:00:00Z');

/**
 * The story's orders, the same on every run: `count` paid on the day (order-1 …), every eighth
 * one revised the next day with 50.00 more (a second payment event, version 2), and a fifth as
 * many new orders on the next day.
 */
export function commissionOrders(count: number): { orders: PaidOrder[]; revised: PaidOrder[]; newOrders: PaidOrder[] } {
  const order = (n: number): PaidOrder => ({ orderId: `order-${n}`, amountCents: 10_000 + 1_250 * (n - 1), percent: 5 + ((n - 1) % 4) });
  const orders = Array.from({ length: count }, (_, i) => order(i + 1));
  const revised = orders.filter((_, i) => i % 8 === 3).map((o) => ({ ...o, amountCents: o.amountCents + 5_000 }));
  const newOrders = Array.from({ length: Math.max(1, Math.floor(count / 5)) }, (_, i) => order(count + i + 1));
  return { orders, revised, newOrders };
}
