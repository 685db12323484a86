// expect TS2741: Property '"notify-seller"' is missing
import { createEventStore, openDatabase, runReplay } from 'rastro';
import { commissions, orderEvents } from '../order-events.js';

const store = createEventStore(await openDatabase({ url: 'memory://' }), { events: orderEvents });
await runReplay(commissions, { store, policy: {} });
