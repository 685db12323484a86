// expect TS2322: Property 'percent' is missing
import { createEventStore, openDatabase } from 'rastro';
import { orderEvents } from '../order-events.js';

const store = createEventStore(await openDatabase({ url: 'memory://' }), { events: orderEvents });
await store.append('order-1', [{ type: 'order.paid', data: { orderId: '1', amountCents: 12_500 } }]);
