// expect TS2353: 'order.payd'' does not exist in type 'EventHandlers<OrderEvents
import { defineProcessor } from 'rastro';
import { orderEvents } from '../order-events.js';

export const commissions = defineProcessor({
  name: 'commissions',
  events: orderEvents,
  effects: ['notify-seller'],
  handlers: {
    'order.payd': async () => undefined,
  },
});
