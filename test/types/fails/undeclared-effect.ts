// expect TS2345: Argument of type '"notify_seller"' is not assignable to parameter of type '"notify-seller"'
import { defineProcessor } from 'rastro';
import { orderEvents } from '../order-events.js';

export const commissions = defineProcessor({
  name: 'commissions',
  events: orderEvents,
  effects: ['notify-seller'],
  handlers: {
    'order.paid': async (_event, ctx) => {
      await ctx.effect('notify_seller', async (key) => key);
    },
  },
});
