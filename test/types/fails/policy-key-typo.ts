// expect TS2561: 'notify_seller' does not exist in type 'Readonly<Record<"notify-seller", EffectRule>>'. Did you mean to write 'notify-seller'?
import { createEventStore, openDatabase, runLive } from 'rastro';
import { commissions, orderEvents } from '../order-events.js';

const store = createEventStore(await openDatabase({ url: 'memory://' }), { events: orderEvents });
await runLive(commissions, { store, policy: { notify_seller: { mode: 'apply', onFailure: 'keep' } } });
