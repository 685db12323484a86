import { createOrders, type Orders } from '../../packages/rastro/src/intake/orders.js';
import type { CancelledAfterImportAlert } from '../../packages/rastro/src/intake/order-normalizer.js';
import type { SnapshotChannel } from '../../packages/rastro/src/intake/order-snapshot.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { freshSchema, type Backend } from './databases.js';

export interface OrdersUnderTest {
  store: EventStore;
  orders: Orders;
  /** Alerts the normalizer sent, with their idempotency keys. */
  alerts: { alert: CancelledAfterImportAlert; key: string }[];
  /** Delivers a snapshot of provider `pied` by a channel, captured at `capturedAt`. */
  deliver(channel: SnapshotChannel, body: Record<string, unknown>, capturedAt: string): Promise<string>;
}

/** Orders on a fresh schema, alerts recorded in memory. */
export async function ordersOn(backend: Backend): Promise<OrdersUnderTest> {
  const { db, schema } = await freshSchema(backend);
  const store = createEventStore(db, { schema });
  const alerts: OrdersUnderTest['alerts'] = [];
  const orders = createOrders(store, {
    alert: async (alert, key) => {
      alerts.push({ alert, key });
      return { sent: alerts.length };
    },
  });
  return {
    store,
    orders,
    alerts,
    async deliver(channel, body, capturedAt) {
      return (await orders.intake.record('pied', channel, body, { capturedAt: new Date(capturedAt) })).eventId;
    },
  };
}
