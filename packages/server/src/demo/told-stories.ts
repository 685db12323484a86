import { createCharges } from 'rastro/internal/charges/charges.js';
import { orderStreamId } from 'rastro/internal/intake/order-snapshot.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { KILLED_CHARGE_KEY } from './charge-story.js';
import { commissionOrders } from './commission-orders.js';

/** The stories `rastro demo` tells. */
export type Story = 'commission' | 'orders' | 'charges';

/**
 * Whether `story` was told in this database already: its first order, order snapshot or charge is
 * there. A story told twice in one place would meet its own first telling (the same orders, keys
 * and runs) and tell something else.
 */
export async function storyTold(store: EventStore, story: Story): Promise<boolean> {
  if (story === 'commission') return (await store.readStream(`order-${commissionOrders(1).orders[0]!.orderId}`)).length > 0;
  if (story === 'orders') return (await store.readStream(orderStreamId('pied', '260065713'))).length > 0;
  return (await createCharges(store).list({ limit: 1000 })).some((charge) => charge.idempotencyKey === KILLED_CHARGE_KEY);
}
