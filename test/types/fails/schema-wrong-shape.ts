// expect TS2322: Type 'number' is not assignable to type 'string'
import { createEventStore, openDatabase } from 'rastro';
import { chargeEvents } from '../order-events.js';

const store = createEventStore(await openDatabase({ url: 'memory://' }), { events: chargeEvents });
await store.append('charge-1', [{ type: 'charge.failed', data: { chargeId: 'c1', reason: 42 } }]);
