import { orderAlertClient, type OrderAlertSender } from '../intake/order-alerts.js';
import { ORDER_NORMALIZER_POLICY } from '../intake/order-normalizer.js';
import { validateSource } from '../intake/order-snapshot.js';
import { pollProvider } from '../intake/provider-poller.js';
import type { RastroConfig } from '../config.js';
import { runLive } from '../processing/live-runner.js';
import type { Services } from '../server.js';
import { progressBar, table } from './output.js';
import { UsageError } from './usage-error.js';

/** A command used the wrong way: main prints the message and the command's usage, and exits 2. */

export const ORDER_USAGE = {
  poll: `usage: rastro poll <source> [--provider-url URL] [--page-size N]

Pages through the provider's REST API (GET <url>/orders?page=N) and stores each order on it as a
snapshot of <source>. The URL comes from --provider-url, else RASTRO_PROVIDER_URL.`,
  normalize: `usage: rastro normalize [--once | --reset]

  (none)    run the order normalizer live, from its checkpoint, until Ctrl-C
  --once    one round: every committed snapshot not yet normalized, then exit
  --reset   reprocess every snapshot as a replay with a new run id (changes nothing that was right)

Alerts go to RASTRO_ORDER_ALERT_URL; without it they are printed here.`,
  orders: `usage: rastro orders renormalize <source>:<orderId>

Re-runs the normalizer over the order's raw snapshots (never over its stored row).`,
  demo: `usage: rastro demo orders

Runs seed 004's story (order 260065713, the five stuck orders, a real cancellation after import)
on a fresh embedded database, with a fake provider sending webhooks and serving REST pages.`,
} as const;

export interface OrderCommandOptions {
  once?: boolean;
  reset?: boolean;
  'provider-url'?: string;
  'page-size'?: string;
}

/** The CLI's alert sender: the configured destination, else a line on stdout. */
export function cliAlertSender(config: RastroConfig): OrderAlertSender {
  if (config.orderAlertUrl) return orderAlertClient(config.orderAlertUrl);
  return async (alert, key) => {
    console.log(`ALERT order ${alert.order} cancelled after import at ${alert.cancelledAt} (key ${key})`);
    return { printed: true };
  };
}

export async function pollCommand(services: Services, config: RastroConfig, args: string[], options: OrderCommandOptions): Promise<void> {
  const [source, ...rest] = args;
  if (!source || rest.length > 0) throw new UsageError(source ? `unexpected argument ${rest[0]}` : 'poll needs the provider name, e.g. rastro poll pied', ORDER_USAGE.poll);
  try {
    validateSource(source);
  } catch (err) {
    throw new UsageError((err as Error).message, ORDER_USAGE.poll);
  }
  const baseUrl = options['provider-url'] ?? config.providerUrl;
  if (!baseUrl) throw new UsageError("poll needs the provider's URL: --provider-url or RASTRO_PROVIDER_URL", ORDER_USAGE.poll);
  const pageSize = options['page-size'] === undefined ? undefined : Number(options['page-size']);
  if (pageSize !== undefined && (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 500)) throw new UsageError('--page-size must be an integer from 1 to 500', ORDER_USAGE.poll);
  const summary = await pollProvider(services.orders.intake, {
    source, baseUrl, pageSize,
    onPage: (page) => console.error(`page ${page.page}: ${page.stored} snapshots stored, ${page.rejected.length} rejected`),
  });
  console.log(`${summary.page} page(s) from ${baseUrl}: ${summary.stored} snapshot(s) stored, ${summary.rejected.length} rejected`);
  if (summary.rejected.length > 0) console.log(table(['order', 'why'], summary.rejected.slice(0, 50).map((r) => [r.orderId, r.reason])));
}

export async function normalizeCommand(services: Services, args: string[], options: OrderCommandOptions): Promise<void> {
  if (args.length > 0) throw new UsageError(`unexpected argument ${args[0]}`, ORDER_USAGE.normalize);
  if (options.once && options.reset) throw new UsageError('choose --once or --reset, not both', ORDER_USAGE.normalize);
  const { orders, store } = services;
  if (options.reset) {
    const bar = progressBar();
    const summary = await orders.reprocess({ onProgress: ({ done, total }) => bar.update(done, total) });
    bar.update(summary.counters.events ?? 0, summary.total, true);
    bar.finish();
    console.log(`reprocess ${summary.runId}: ${summary.total} events`);
    console.log(table(['counter', 'value'], Object.entries(summary.counters)));
    return;
  }
  if (options.once) {
    const round = await orders.normalizeRound({ onProgress: (left) => console.error(`${left} event(s) to normalize`) });
    console.log(`one round: ${round.events} event(s) normalized`);
    if (round.events > 0) console.log(table(['counter', 'value'], Object.entries(round.counters)));
    return;
  }
  const runner = await runLive(orders.normalizer, { store, policy: ORDER_NORMALIZER_POLICY, onError: (err) => console.error(`rastro: batch failed: ${(err as Error).message}`) });
  console.log(`order normalizer running live (${runner.runId}); Ctrl-C stops it`);
  const progress = setInterval(() => console.error(`${runner.counters.get('events')} event(s) normalized so far`), 10_000);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  clearInterval(progress);
  await runner.stop();
}

export async function ordersCommand(services: Services, args: string[]): Promise<void> {
  const [sub, id, ...rest] = args;
  if (sub !== 'renormalize') throw new UsageError(sub ? `unknown orders command ${sub}` : 'orders needs a command', ORDER_USAGE.orders);
  if (!id || rest.length > 0) throw new UsageError(id ? `unexpected argument ${rest[0]}` : 'renormalize needs the order id, e.g. pied:260065713', ORDER_USAGE.orders);
  const summary = await services.orders.renormalize(id);
  console.log(`order ${id} re-normalized from ${summary.total} raw event(s) (run ${summary.runId})`);
  console.log(table(['counter', 'value'], Object.entries(summary.counters)));
}
