#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { resolveConfig, type RastroConfig } from '../config.js';
import { RastroError } from '../errors.js';
import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/open-database.js';
import { openServices, startServer, type Services } from '../server.js';
import { createEventStore } from '../store/event-store.js';
import { runCommissionDemo, runOrderDemo } from './demo-command.js';
import { UsageError } from './usage-error.js';
import { consumeCommand, deadLettersCommand, outboxCommand, relayCommand, type OutboxCommandOptions } from './outbox-commands.js';
import { cliAlertSender, normalizeCommand, ORDER_USAGE, ordersCommand, pollCommand, type OrderCommandOptions } from './order-commands.js';
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
  relay [--name N] [--types a,b] [--stream-prefix P]
                  publish the outbox (or chosen events) to RASTRO_BROKER_URL until stopped
  outbox status | outbox parked list|retry|skip | outbox cleanup [--days N]
  consume         the inbox: append broker messages to the log, exactly once
  inbox dead-letters   messages the inbox could not store
  poll <source> [--provider-url URL] [--page-size N]
                  page through the provider's REST API and store each order as a snapshot
  normalize [--once | --reset]
                  run the order normalizer live, one round (--once), or reprocess everything (--reset)
  orders renormalize <source>:<orderId>   re-run the normalizer over one order's raw snapshots
  demo commission run the commission story end to end on an embedded database
  demo orders     run seed 004's order story end to end on an embedded database

  rastro <command> --help shows a command's usage; rastro --version the version

  --processors <path> loads processors from a module; by default from ./rastro.config.js or .ts

environment:
  DATABASE_URL      postgres:// URL; without it rastro uses embedded PGlite in RASTRO_DATA_DIR (./.rastro)
  RASTRO_SCHEMA     schema for rastro's tables (rastro)
  PORT, HOST        where serve listens (3000, 127.0.0.1)
  RASTRO_LOG_LEVEL  fatal|error|warn|info|debug|trace|silent (info)
  RASTRO_API_KEY    bearer key for every route but /healthz and /readyz; required for a non-loopback HOST
  RASTRO_SNAPSHOT_EVERY           account snapshot interval in events, 0 = off (100)
  RASTRO_IDEMPOTENCY_TTL_SECONDS  how long idempotency keys are kept (86400)
  RASTRO_BROKER_URL nats://… or amqp://…; unset: the relay publishes in process
  RASTRO_RELAY      on|off: whether serve runs a relay (on)
  RASTRO_SUBJECT_PREFIX, RASTRO_NATS_STREAM, RASTRO_NATS_DUPLICATE_WINDOW_SECONDS   (rastro, RASTRO, 120)
  RASTRO_AMQP_EXCHANGE            the RabbitMQ topic exchange (rastro)
  RASTRO_OUTBOX_RETENTION_DAYS    published messages kept this many days (7)
  RASTRO_OUTBOX_RETENTION         delete | daily-partitions (delete)
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

type Options = CommandOptions & OutboxCommandOptions & OrderCommandOptions;

interface Command {
  usage: string;
  run(args: string[], options: Options): Promise<void>;
}

const withStore = (fn: (store: Services['store'], config: RastroConfig) => Promise<void>) =>
  withServices((services, config) => fn(services.store, config));

const COMMANDS: Record<string, Command> = {
  serve: { usage: 'rastro serve\n\nmigrate, then serve the HTTP API and run an outbox relay (RASTRO_RELAY=off: no relay)', run: () => serve() },
  migrate: {
    usage: 'rastro migrate\n\napply pending migrations and exit',
    run: async () => {
      await withServices(async () => undefined);
      console.log('migrations applied');
    },
  },
  'store status': { usage: 'rastro store status\n\nwhat holds event readers back', run: () => withServices(storeStatus) },
  'store rebase': { usage: 'rastro store rebase\n\nafter restoring a dump into another cluster: make new events sort after restored ones', run: () => rebaseStore() },
  'snapshots rebuild': {
    usage: 'rastro snapshots rebuild\n\ndrop account snapshots and rebuild them from the events',
    run: async () => {
      const { dropped, written } = await withServices(({ ledger }) => ledger.rebuildSnapshots());
      console.log(`account snapshots: ${dropped} dropped, ${written} written from the events`);
    },
  },
  'idempotency cleanup': {
    usage: 'rastro idempotency cleanup\n\ndelete expired idempotency keys (serve also does this every 10 minutes)',
    run: async () => {
      const removed = await withServices(({ keys }) => keys.cleanup());
      console.log(`expired idempotency keys removed: ${removed}`);
    },
  },
  replay: {
    usage: 'rastro replay <processor> --from <ts> --to <ts> [--run-id ID] [--simulate] [--policy policy.json]\nrastro replay diff <runId> [--csv]',
    run: (args, options) => withServices(({ store }) => replayCommand(store, args, options)),
  },
  effects: { usage: 'rastro effects list [--state reserved|done|uncertain] [--limit N]\nrastro effects resolve <key> --as done|retry', run: (args, options) => withServices(({ store }) => effectsCommand(store, args, options)) },
  parked: { usage: 'rastro parked list [--run-id ID] | parked retry <eventId> | parked skip <eventId>', run: (args, options) => withServices(({ store }) => parkedCommand(store, args, options)) },
  live: { usage: 'rastro live <processor> [--policy policy.json]\n\nrun a processor live, tailing the log', run: (args, options) => withServices(({ store }) => liveCommand(store, args, options)) },
  sweep: { usage: 'rastro sweep\n\nmove abandoned reservations: keep → uncertain, release → released', run: () => withServices(({ store }) => sweepCommand(store)) },
  relay: {
    usage: `rastro relay [--name N] [--partitions N] [--types a,b] [--stream-prefix P] [--aggregate-type T]

publish the outbox to RASTRO_BROKER_URL until stopped (SIGINT/SIGTERM); with --types or
--stream-prefix, publish those events of the log instead. Relays of one name share the work.`,
    run: (_args, options) => withStore((store, config) => relayCommand(store, config, options)),
  },
  outbox: {
    usage: `rastro outbox status [--json]          relays' lag, pending and parked messages, counts
rastro outbox parked list [--relay N] [--json]
rastro outbox parked retry <messageId>  publish its aggregate's parked messages again, in order
rastro outbox parked skip <messageId>   never publish this one; retry the rest of its aggregate
rastro outbox cleanup [--days N]        delete published messages older than N days (RASTRO_OUTBOX_RETENTION_DAYS, 7)`,
    run: (args, options) => withStore((store, config) => outboxCommand(store, config, args, options)),
  },
  consume: {
    usage: 'rastro consume [--queue Q] [--durable D]\n\nthe inbox: append each message of RASTRO_BROKER_URL to the log as an event with the message id, until stopped',
    run: (_args, options) => withStore((store, config) => consumeCommand(store, config, options)),
  },
  'inbox dead-letters': { usage: 'rastro inbox dead-letters [--limit N] [--json]\n\nmessages the inbox could not store, with the reason', run: (_args, options) => withStore((store) => deadLettersCommand(store, options)) },
  'demo commission': { usage: 'rastro demo commission\n\nthe commission story end to end on an embedded database', run: () => runCommissionDemo() },
  poll: { usage: ORDER_USAGE.poll, run: (args, options) => withServices((services, config) => pollCommand(services, config, args, options)) },
  normalize: { usage: ORDER_USAGE.normalize, run: (args, options) => withServices((services) => normalizeCommand(services, args, options)) },
  orders: { usage: ORDER_USAGE.orders, run: (args) => withServices((services) => ordersCommand(services, args)) },
  'demo orders': {
    usage: ORDER_USAGE.demo,
    run: async (args) => {
      if (args.length > 0) throw new UsageError(`unexpected argument ${args[0]}`, ORDER_USAGE.demo);
      return runOrderDemo();
    },
  },
};

const OPTIONS = {
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
  name: { type: 'string' },
  types: { type: 'string' },
  'stream-prefix': { type: 'string' },
  'aggregate-type': { type: 'string' },
  partitions: { type: 'string' },
  days: { type: 'string' },
  json: { type: 'boolean' },
  relay: { type: 'string' },
  queue: { type: 'string' },
  durable: { type: 'string' },
  once: { type: 'boolean' },
  reset: { type: 'boolean' },
  'provider-url': { type: 'string' },
  'page-size': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;


function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, strict: true, options: OPTIONS });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function version(): Promise<string> {
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parse(argv);
  if (values.version) return void console.log(await version());
  const [command, sub] = positionals;
  if (command === undefined || command === 'help') return void console.log(USAGE);
  const twoWords = `${command} ${sub}`;
  const name = COMMANDS[twoWords] ? twoWords : COMMANDS[command] ? command : undefined;
  if (!name) throw new UsageError(`unknown command ${positionals.join(' ')}`);
  if (values.help) {
    const usage = COMMANDS[name]!.usage;
    return void console.log(usage.startsWith('usage:') ? usage : `usage: ${usage}`);
  }
  return COMMANDS[name]!.run(positionals.slice(name.split(' ').length), values);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) {
    console.error(err.usage ? `rastro: ${err.message}\n\n${err.usage}` : `rastro: ${err.message} (rastro --help lists the commands and options)`);
    process.exit(2);
  }
  if (err instanceof RastroError) console.error(`rastro: ${err.message} [${err.code}]`);
  else console.error(`rastro: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
