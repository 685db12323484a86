// expect TS2322: Type 'string' is not assignable to type 'number'
import { createEventStore, openDatabase } from 'rastro';
import { orderEvents } from '../order-events.js';

const store = createEventStore(await openDatabase({ url: 'memory://' }), { events: orderEvents });
await store.append('order-1', [{ type: 'order.paid', data: { orderId: '1', amountCents: '12500', percent: 8 } }]);
