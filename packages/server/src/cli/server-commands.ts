import type { Command } from 'commander';
import { resolveConfig } from '../config.js';
import { migrate } from 'rastro/internal/db/migrate.js';
import { openDatabase } from 'rastro/internal/db/open-database.js';
import { ClosedError } from 'rastro/internal/errors.js';
import { startServer, type RunningServer } from '../server.js';
import { createEventStore } from 'rastro/internal/store/event-store.js';
import { group } from './command-tree.js';
import { jsonOption, processorsOption } from './options.js';
import { printJson } from './output.js';
import { startProgress } from './progress.js';
import { withServices } from './services.js';

async function serve(options: { processors?: string }): Promise<void> {
  const waiting = new AbortController();
  const stopWaiting = () => waiting.abort();
  process.once('SIGINT', stopWaiting);
  process.once('SIGTERM', stopWaiting);
  let server: RunningServer;
  try {
    server = await startServer({ processors: options.processors }, {
      signal: waiting.signal,
      onDatabaseWait: ({ attempt, reason, retryInMs, url }) => {
        process.stderr.write(`${new Date().toISOString()} rastro serve: waiting for the database: ${reason} (attempt ${attempt}, next in ${(retryInMs / 1000).toFixed(1)} s); ${url} answers 503 meanwhile\n`);
      },
    });
  } catch (err) {
    if (waiting.signal.aborted && err instanceof ClosedError) {
      console.log('rastro serve: stopped before its database could be reached');
      return;
    }
    throw err;
  } finally {
    process.removeListener('SIGINT', stopWaiting);
    process.removeListener('SIGTERM', stopWaiting);
  }
  console.log(`rastro listening on ${server.url} (${server.config.embedded ? `embedded database in ${server.config.dataDir}` : 'PostgreSQL'})`);
  console.log(`operations console: ${server.url}/console/`);
  const shutdown = () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

/** Runs without the transaction-id check that `openServices` makes: this command is its cure. */
async function rebaseStore(): Promise<void> {
  const config = resolveConfig({ logLevel: 'silent' });
  const db = await openDatabase({ url: config.databaseUrl, poolSize: config.poolSize });
  try {
    await migrate(db, { schema: config.schema });
    const offset = await createEventStore(db, { schema: config.schema }).rebaseTransactionOrder();
    console.log(`transaction order offset is now ${offset}; readers resume from their checkpoints`);
  } finally {
    await db.close();
  }
}

async function storeStatus(options: { json?: boolean }): Promise<void> {
  const delay = await withServices(({ store }) => store.readerDelay());
  if (options.json) return printJson(delay);
  console.log(`events held back from readers: ${delay.heldBack}`);
  console.log(`oldest open writing transaction: ${delay.oldestWriterMs === null ? 'none' : `${delay.oldestWriterMs} ms`}`);
  console.log(`oldest prepared transaction: ${delay.oldestPreparedMs === null ? 'none' : `${delay.oldestPreparedMs} ms`}`);
}

async function rebuildSnapshots(): Promise<void> {
  const progress = startProgress();
  const { dropped, written } = await withServices(({ ledger }) =>
    ledger.rebuildSnapshots({ onProgress: ({ accounts, written: so }) => progress.show(`${accounts} accounts read, ${so} snapshots written`) }),
  );
  progress.end();
  console.log(`account snapshots: ${dropped} dropped, ${written} written from the events`);
}

/** `rastro serve`, `migrate`, `store …`, `snapshots rebuild`, `idempotency cleanup`. */
export function registerServerCommands(program: Command): void {
  program.command('serve')
    .summary('migrate, then serve the HTTP API and the console at /console (PORT, HOST)')
    .description('migrate, then serve the HTTP API, the operations console at /console, an outbox relay (RASTRO_RELAY=off: no relay), the order normalizer (RASTRO_NORMALIZER=off: none) and a reconciliation loop (RASTRO_RECONCILE_INTERVAL_SECONDS=0: none) until SIGINT/SIGTERM; replays and parked retries from the console use the processors of --processors or ./rastro.config.js')
    .addOption(processorsOption())
    .action(serve);
  program.command('migrate').description('apply pending migrations and exit').action(async () => {
    await withServices(async () => undefined);
    console.log('migrations applied');
  });
  const store = group(program, 'store', "the event store's health and repair");
  store.command('status').description('what holds event readers back').addOption(jsonOption()).action(storeStatus);
  store.command('rebase').description('after restoring a dump into another cluster: make new events sort after restored ones').action(rebaseStore);
  group(program, 'snapshots', 'account snapshots').command('rebuild').description('drop account snapshots and rebuild them from the events').action(rebuildSnapshots);
  group(program, 'idempotency', 'idempotency keys').command('cleanup')
    .description('delete expired idempotency keys (serve also does this every 10 minutes)')
    .action(async () => {
      const removed = await withServices(({ keys }) => keys.cleanup());
      console.log(`expired idempotency keys removed: ${removed}`);
    });
}
