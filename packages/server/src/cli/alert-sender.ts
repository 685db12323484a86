import type { RastroConfig } from '../config.js';
import { orderAlertClient, type OrderAlertSender } from 'rastro/internal/intake/order-alerts.js';

/** The CLI's alert sender: the configured destination, else a line on stdout. */
export function cliAlertSender(config: RastroConfig): OrderAlertSender {
  if (config.orderAlertUrl) return orderAlertClient(config.orderAlertUrl);
  return async (alert, key) => {
    console.log(`ALERT order ${alert.order} cancelled after import at ${alert.cancelledAt} (key ${key})`);
    return { printed: true };
  };
}
