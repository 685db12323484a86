// The order service's events and its commissions processor: what the service declares once.
import { defineEvents, defineProcessor } from 'rastro';

/** `order.paid` as the service wrote it before amounts were in cents (version 1). */
export interface OrderPaidV1 {
  orderId: string;
  amount: number;
}

/** `order.paid` as the service writes it now (version 2). */
export interface OrderPaid {
  orderId: string;
  sellerId: string;
  amountCents: number;
  percent: number;
}

export const events = defineEvents<{ 'order.paid': OrderPaid }>({
  'order.paid': {
    version: 2,
    upcast: { 1: (v1: OrderPaidV1): OrderPaid => ({ orderId: v1.orderId, sellerId: 'unknown', amountCents: Math.round(v1.amount * 100), percent: 8 }) },
  },
});

/** The seller's notification service: it cannot deduplicate, so each key must reach it once. */
export interface SellerNotifier {
  notify(message: { orderId: string; cents: number }, idempotencyKey: string): Promise<void>;
}

export function commissions(seller: SellerNotifier) {
  return defineProcessor({
    name: 'commissions',
    events,
    effects: ['notify-seller'],
    handlers: {
      'order.paid': async (event, ctx) => {
        const { orderId, sellerId, amountCents, percent } = event.data;
        const cents = Math.round((amountCents * percent) / 100);
        await ctx.upsert('commission', orderId, { sellerId, cents }, { version: event.streamVersion });
        await ctx.effect('notify-seller', (key) => seller.notify({ orderId, cents }, key));
      },
    },
  });
}

export const policy = { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } as const;
