// expect TS2820: Type '"order.payd"' is not assignable to type '"order.paid" | "order.refunded"'
import { createEventStore, openDatabase } from 'rastro';
import { orderEvents } from '../order-events.js';

const store = createEventStore(await openDatabase({ url: 'memory://' }), { events: orderEvents });
await store.append('order-1', [{ type: 'order.payd', data: { orderId: '1', amountCents: 12_500, percent: 8 } }]);
