import { Option, type Command } from 'commander';
import type { RastroConfig } from '../config.js';
import { ORDER_NORMALIZER_POLICY } from 'rastro/internal/intake/order-normalizer.js';
import { validateSource } from 'rastro/internal/intake/order-snapshot.js';
import { pollProvider } from 'rastro/internal/intake/provider-poller.js';
import { runLive } from 'rastro/internal/processing/live-runner.js';
import type { Services } from '../server.js';
import { group } from './command-tree.js';
import { checkedArgument, jsonOption, wholeNumber } from './options.js';
import { counterTable, printJson, table } from './output.js';
import { showWhileRunning, startProgress } from './progress.js';
import { withRoleServices, withServices } from './services.js';
import { stopSignal } from './stop-signal.js';
import { UsageError } from './usage-error.js';

async function poll(services: Services, config: RastroConfig, source: string, options: { providerUrl?: string; pageSize?: number; json?: boolean }): Promise<void> {
  const baseUrl = options.providerUrl ?? config.providerUrl;
  if (!baseUrl) throw new UsageError("poll needs the provider's URL: --provider-url or RASTRO_PROVIDER_URL");
  const progress = startProgress();
  const summary = await pollProvider(services.orders.intake, {
    source, baseUrl, pageSize: options.pageSize,
    onPage: (page) => progress.show(`page ${page.page}: ${page.stored} snapshots stored, ${page.rejected.length} rejected`),
  });
  progress.end();
  if (options.json) return printJson({ baseUrl, pages: summary.page, stored: summary.stored, rejected: summary.rejected });
  console.log(`${summary.page} page(s) from ${baseUrl}: ${summary.stored} snapshot(s) stored, ${summary.rejected.length} rejected`);
  if (summary.rejected.length > 0) console.log(table(['order', 'why'], summary.rejected.slice(0, 50).map((r) => [r.orderId, r.reason])));
}

async function reprocess({ orders }: Services, options: { json?: boolean }): Promise<void> {
  const progress = startProgress();
  const summary = await orders.reprocess({ onProgress: ({ done, total }) => progress.count(done, total) });
  progress.count(summary.counters.events ?? 0, summary.total);
  progress.end();
  if (options.json) return printJson({ runId: summary.runId, total: summary.total, counters: summary.counters });
  console.log(`reprocess ${summary.runId}: ${summary.total} events`);
  console.log(counterTable(summary.counters));
}

async function oneRound({ orders }: Services, options: { json?: boolean }): Promise<void> {
  const progress = startProgress();
  const round = await orders.normalizeRound({ onProgress: (left) => progress.show(`${left} event(s) to normalize`) });
  progress.end();
  if (options.json) return printJson(round);
  console.log(`one round: ${round.events} event(s) normalized`);
  if (round.events > 0) console.log(counterTable(round.counters));
}

async function normalizeLive({ orders, store }: Services): Promise<void> {
  const progress = startProgress({ pipedEveryMs: 10_000 });
  const runner = await runLive(orders.normalizer, { store, policy: ORDER_NORMALIZER_POLICY, onError: (err) => progress.note(`rastro: batch failed: ${(err as Error).message}`) });
  console.log(`order normalizer running live (${runner.runId}); Ctrl-C stops it`);
  const stopShowing = showWhileRunning(progress, () => `${runner.counters.get('events')} event(s) normalized so far`);
  await stopSignal();
  stopShowing();
  await runner.stop();
}

type NormalizeOptions = { once?: boolean; reset?: boolean; json?: boolean };

async function normalize(options: NormalizeOptions): Promise<void> {
  if (options.reset) return withServices((services) => reprocess(services, options));
  if (options.once) return withServices((services) => oneRound(services, options));
  if (options.json) throw new UsageError('--json goes with --once or --reset');
  return withRoleServices('normalize', normalizeLive);
}

async function renormalize({ orders }: Services, id: string, options: { json?: boolean }): Promise<void> {
  const summary = await orders.renormalize(id);
  if (options.json) return printJson({ order: id, runId: summary.runId, total: summary.total, counters: summary.counters });
  console.log(`order ${id} re-normalized from ${summary.total} raw event(s) (run ${summary.runId})`);
  console.log(counterTable(summary.counters));
}

/** `rastro poll`, `normalize`, `orders renormalize`. */
export function registerOrderCommands(program: Command): void {
  program.command('poll')
    .summary("page through the provider's REST API and store each order as a snapshot")
    .description("Pages through the provider's REST API (GET <url>/orders?page=N) and stores each order on it as a snapshot of <source>. The URL comes from --provider-url, else RASTRO_PROVIDER_URL.")
    .addArgument(checkedArgument('<source>', 'the provider name, e.g. pied', validateSource))
    .option('--provider-url <url>', "the provider's REST API (default RASTRO_PROVIDER_URL)")
    .addOption(new Option('--page-size <n>', 'orders per page').argParser(wholeNumber('--page-size', { min: 1, max: 500 })))
    .addOption(jsonOption())
    .action((source: string, options) => withServices((services, config) => poll(services, config, source, options)));
  program.command('normalize')
    .summary('run the order normalizer live, one round (--once), or reprocess everything (--reset)')
    .description('Runs the order normalizer live, from its checkpoint, until Ctrl-C. Alerts go to RASTRO_ORDER_ALERT_URL; without it they are printed here.')
    .option('--once', 'one round: every committed snapshot not yet normalized, then exit')
    .addOption(new Option('--reset', 'reprocess every snapshot as a replay with a new run id (changes nothing that was right)').conflicts('once'))
    .addOption(jsonOption())
    .action(normalize);
  group(program, 'orders', 'normalized orders').command('renormalize')
    .summary("re-run the normalizer over one order's raw snapshots")
    .description("Re-runs the normalizer over the order's raw snapshots (never over its stored row).")
    .argument('<order>', 'the order id as <source>:<orderId>, e.g. pied:260065713')
    .addOption(jsonOption())
    .action((id: string, options: { json?: boolean }) => withServices((services) => renormalize(services, id, options)));
}
