// The events the type fixtures share: a plain TypeScript map with an interface, and schemas.
import * as z from 'zod';
import { defineEvents, defineProcessor } from 'rastro';

export interface OrderPaid {
  orderId: string;
  amountCents: number;
  percent: number;
}

export type OrderEvents = {
  'order.paid': OrderPaid;
  'order.refunded': { orderId: string; amountCents: number };
};

export const orderEvents = defineEvents<OrderEvents>({
  'order.paid': { version: 2, upcast: { 1: (v1: { orderId: string; amount: number; percent: number }) => ({ orderId: v1.orderId, amountCents: v1.amount, percent: v1.percent }) } },
  'order.refunded': {},
});

export const chargeEvents = defineEvents({
  'charge.captured': z.object({ chargeId: z.string(), cents: z.number().int() }),
  'charge.failed': { schema: z.object({ chargeId: z.string(), reason: z.string() }), version: 2, upcast: { 1: (v1: { chargeId: string }) => ({ ...v1, reason: 'unknown' }) } },
});

export const commissions = defineProcessor({
  name: 'commissions',
  events: orderEvents,
  effects: ['notify-seller'],
  handlers: {
    'order.paid': async (event, ctx) => {
      await ctx.effect('notify-seller', async (key) => `${key}:${event.data.amountCents}`);
    },
  },
});
