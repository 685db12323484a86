// The fold the seed's full-history round applies per snapshot: rastro's own, so both contenders
// compute the same state.
export { applyOrderEvent } from 'rastro/internal/intake/order-state.js';
import { emptyOrder } from 'rastro/internal/intake/order-state.js';

export const emptyOrderOf = (data) => emptyOrder(data.source, data.orderId);
