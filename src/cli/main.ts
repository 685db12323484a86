#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { resolveConfig, type RastroConfig } from '../config.js';
import { RastroError } from '../errors.js';
import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/open-database.js';
import { openServices, startServer, type Services } from '../server.js';
import { createEventStore } from '../store/event-store.js';
import { runCommissionDemo, runOrderDemo } from './demo-command.js';
import { cliAlertSender, normalizeCommand, ORDER_USAGE, ordersCommand, pollCommand, UsageError, type OrderCommandOptions } from './order-commands.js';
import { effectsCommand, liveCommand, parkedCommand, replayCommand, sweepCommand, type CommandOptions } from './processing-commands.js';

const USAGE = `usage: rastro <command>

commands:
  serve           migrate, then serve the HTTP API (PORT, HOST)
  migrate         apply pending migrations and exit
  store status    show what holds event readers back
  store rebase    after restoring a dump into another cluster: make new events sort after restored ones
  snapshots rebuild    drop account snapshots and rebuild them from the events
  idempotency cleanup  delete expired idempotency keys (serve also does this every 10 minutes)
  live <processor> [--policy policy.json]
                  run a processor live, tailing the log
  replay <processor> --from <ts> --to <ts> [--run-id ID] [--simulate] [--policy policy.json]
                  run a processor over a window with its own run id and checkpoint
  replay diff <runId> [--csv]     what a simulated run would change
  effects list [--state reserved|done|uncertain]
  effects resolve <key> --as done|retry
  parked list [--run-id ID] | parked retry <eventId> | parked skip <eventId>
  sweep           move abandoned reservations: keep → uncertain, release → released
  poll <source> [--provider-url URL] [--page-size N]
                  page through the provider's REST API and store each order as a snapshot
  normalize [--once | --reset]
                  run the order normalizer live, one round (--once), or reprocess everything (--reset)
  orders renormalize <source>:<orderId>   re-run the normalizer over one order's raw snapshots
  demo commission run the commission story end to end on an embedded database
  demo orders     run seed 004's order story end to end on an embedded database

  --help          a command's usage (rastro poll --help)

  --processors <path> loads processors from a module; by default from ./rastro.config.js or .ts

environment:
  DATABASE_URL      postgres:// URL; without it rastro uses embedded PGlite in RASTRO_DATA_DIR (./.rastro)
  RASTRO_SCHEMA     schema for rastro's tables (rastro)
  PORT, HOST        where serve listens (3000, 127.0.0.1)
  RASTRO_LOG_LEVEL  fatal|error|warn|info|debug|trace|silent (info)
  RASTRO_API_KEY    bearer key for every route but /healthz; required for a non-loopback HOST
  RASTRO_SNAPSHOT_EVERY           account snapshot interval in events, 0 = off (100)
  RASTRO_IDEMPOTENCY_TTL_SECONDS  how long idempotency keys are kept (86400)
  RASTRO_ORDER_ALERT_URL          where "cancelled after import" alerts are posted
  RASTRO_PROVIDER_URL             the payment provider's REST API, for poll and serve's poll loop
  RASTRO_PROVIDER_SOURCE          the provider's name in serve's poll loop (pied)
  RASTRO_POLL_INTERVAL_SECONDS    serve polls the provider this often, 0 = never (0)`;

async function serve(): Promise<void> {
  const server = await startServer();
  console.log(`rastro listening on ${server.url} (${server.config.embedded ? `embedded database in ${server.config.dataDir}` : 'PostgreSQL'})`);
  const shutdown = () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

async function withServices<T>(fn: (services: Services, config: RastroConfig) => Promise<T>): Promise<T> {
  const config = resolveConfig({ logLevel: 'silent' });
  const opened = await openServices(config, { alert: cliAlertSender(config) });
  try {
    return await fn(opened, config);
  } finally {
    await opened.db.close();
  }
}

/** Runs without the transaction-id check that `openServices` makes: this command is its cure. */
async function rebaseStore(): Promise<void> {
  const config = resolveConfig({ logLevel: 'silent' });
  const db = await openDatabase({ url: config.databaseUrl });
  try {
    await migrate(db, { schema: config.schema });
    const offset = await createEventStore(db, { schema: config.schema }).rebaseTransactionOrder();
    console.log(`transaction order offset is now ${offset}; readers resume from their checkpoints`);
  } finally {
    await db.close();
  }
}

async function storeStatus({ store }: Services): Promise<void> {
  const delay = await store.readerDelay();
  console.log(`events held back from readers: ${delay.heldBack}`);
  console.log(`oldest open writing transaction: ${delay.oldestWriterMs === null ? 'none' : `${delay.oldestWriterMs} ms`}`);
  console.log(`oldest prepared transaction: ${delay.oldestPreparedMs === null ? 'none' : `${delay.oldestPreparedMs} ms`}`);
}

type Command = (args: string[], options: CommandOptions & OrderCommandOptions) => Promise<void>;

const COMMANDS: Record<string, Command> = {
  serve: () => serve(),
  migrate: async () => {
    await withServices(async () => undefined);
    console.log('migrations applied');
  },
  'store status': () => withServices(storeStatus),
  'store rebase': () => rebaseStore(),
  'snapshots rebuild': async () => {
    const { dropped, written } = await withServices(({ ledger }) => ledger.rebuildSnapshots());
    console.log(`account snapshots: ${dropped} dropped, ${written} written from the events`);
  },
  'idempotency cleanup': async () => {
    const removed = await withServices(({ keys }) => keys.cleanup());
    console.log(`expired idempotency keys removed: ${removed}`);
  },
  replay: (args, options) => withServices(({ store }) => replayCommand(store, args, options)),
  effects: (args, options) => withServices(({ store }) => effectsCommand(store, args, options)),
  parked: (args, options) => withServices(({ store }) => parkedCommand(store, args, options)),
  live: (args, options) => withServices(({ store }) => liveCommand(store, args, options)),
  sweep: () => withServices(({ store }) => sweepCommand(store)),
  'demo commission': () => runCommissionDemo(),
  poll: (args, options) => withServices((services, config) => pollCommand(services, config, args, options)),
  normalize: (args, options) => withServices((services) => normalizeCommand(services, args, options)),
  orders: (args) => withServices((services) => ordersCommand(services, args)),
  'demo orders': (args) => {
    if (args.length > 0) throw new UsageError(`unexpected argument ${args[0]}`, ORDER_USAGE.demo);
    return runOrderDemo();
  },
};

/** Usage of the commands that have their own. */
const COMMAND_USAGE: Record<string, string> = { poll: ORDER_USAGE.poll, normalize: ORDER_USAGE.normalize, orders: ORDER_USAGE.orders, 'demo orders': ORDER_USAGE.demo };

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      'run-id': { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      simulate: { type: 'boolean' },
      policy: { type: 'string' },
      processors: { type: 'string' },
      csv: { type: 'boolean' },
      state: { type: 'string' },
      as: { type: 'string' },
      limit: { type: 'string' },
      once: { type: 'boolean' },
      reset: { type: 'boolean' },
      'provider-url': { type: 'string' },
      'page-size': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, sub] = positionals;
  if (command === undefined || command === 'help') return void console.log(USAGE);
  if (values.help) return void console.log(COMMAND_USAGE[`${command} ${sub}`] ?? COMMAND_USAGE[command] ?? USAGE);
  const twoWords = COMMANDS[`${command} ${sub}`];
  if (twoWords) return twoWords(positionals.slice(2), values);
  const oneWord = COMMANDS[command];
  if (oneWord) return oneWord(positionals.slice(1), values);
  console.error(`rastro: unknown command ${positionals.join(' ')}\n\n${USAGE}`);
  process.exitCode = 2;
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) {
    console.error(`rastro: ${err.message}\n\n${err.usage}`);
    process.exit(2);
  }
  if (String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')) {
    console.error(`rastro: ${(err as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (err instanceof RastroError) console.error(`rastro: ${err.message} [${err.code}]`);
  else console.error(`rastro: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
