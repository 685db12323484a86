import { EffectNotAttemptedError } from '../processing/processor.js';
import type { CancelledAfterImportAlert } from './order-normalizer.js';

/** Sends an alert; `idempotencyKey` is the same in every run. */
export type OrderAlertSender = (alert: CancelledAfterImportAlert, idempotencyKey: string) => Promise<unknown>;

/**
 * Posts each alert as JSON to `url` with an `Idempotency-Key` header. A refused connection means
 * it was certainly not received ({@link EffectNotAttemptedError}); any other failure may have
 * been, and the effect ledger keeps it `uncertain` for review.
 *
 * @example
 * ```ts
 * const orders = createOrders(store, { alert: orderAlertClient('https://alerts.example.com/orders') })
 * ```
 */
export function orderAlertClient(url: string): OrderAlertSender {
  return async (alert, idempotencyKey) => {
    let response: Response;
    try {
      response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey }, body: JSON.stringify(alert) });
    } catch (err) {
      const code = (err as { cause?: { code?: string } }).cause?.code;
      if (code === 'ECONNREFUSED' || code === 'ENOTFOUND') throw new EffectNotAttemptedError(`alert destination unreachable (${code})`, { cause: err });
      throw err;
    }
    if (!response.ok) throw new Error(`alert destination answered ${response.status}`);
    return { status: response.status };
  };
}

/**
 * Without a destination the alert is not sent: the event is parked (`rastro parked list`) and
 * sent by `rastro parked retry` once `RASTRO_ORDER_ALERT_URL` is set. Nothing is lost.
 */
export const noAlertDestination: OrderAlertSender = async () => {
  throw new EffectNotAttemptedError('no alert destination: set RASTRO_ORDER_ALERT_URL');
};
