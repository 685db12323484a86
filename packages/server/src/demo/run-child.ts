/**
 * A commission processor in a process of its own, for the demo and the crash tests to kill.
 * Configured by environment: RASTRO_DATABASE (postgres:// URL or PGlite folder), RASTRO_SCHEMA,
 * SELLER_URL, FINANCE_URL (optional), DIVISOR, BATCH_SIZE, EFFECT_CONCURRENCY, and MODE=live or
 * MODE=replay with RUN_ID (and SIMULATE=1 to simulate, MAX_RATE for a rate limit in events/s).
 */
import { openDatabase } from 'rastro/internal/db/open-database.js';
import { runLive } from 'rastro/internal/processing/live-runner.js';
import { runReplay } from 'rastro/internal/processing/replay-runner.js';
import { createEventStore } from 'rastro/internal/store/event-store.js';
import { commissionProcessor, NOTIFY_FINANCE, NOTIFY_SELLER } from './commission.js';
import { sellerNotifierClient } from './seller-notifier.js';

const env = process.env;
const db = await openDatabase({ url: env.RASTRO_DATABASE! });
const store = createEventStore(db, { schema: env.RASTRO_SCHEMA ?? 'rastro' });
const finance = env.FINANCE_URL ? sellerNotifierClient(env.FINANCE_URL) : undefined;
const processor = commissionProcessor(sellerNotifierClient(env.SELLER_URL!), { divisor: Number(env.DIVISOR ?? 100), finance });
const policy = {
  [NOTIFY_SELLER]: { mode: 'apply', onFailure: 'keep' },
  [NOTIFY_FINANCE]: { mode: 'apply', onFailure: 'release' },
} as const;
const batchSize = Number(env.BATCH_SIZE ?? 5);
const effectConcurrency = Number(env.EFFECT_CONCURRENCY ?? 2);

if (env.MODE === 'live') {
  await runLive(processor, { store, policy, batchSize, pollIntervalMs: 50, effectConcurrency });
  process.stdout.write('ready\n');
} else {
  await runReplay(processor, {
    store, runId: env.RUN_ID!, policy, batchSize, effectConcurrency, simulate: env.SIMULATE === '1',
    maxRate: env.MAX_RATE ? Number(env.MAX_RATE) : undefined,
  });
  await db.close();
  process.stdout.write('done\n');
}
