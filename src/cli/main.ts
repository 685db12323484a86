#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { resolveConfig } from '../config.js';
import { RastroError } from '../errors.js';
import type { Services } from '../server.js';
import { runCommissionDemo } from './demo-command.js';
import { effectsCommand, liveCommand, parkedCommand, replayCommand, sweepCommand } from './processing-commands.js';
import { openServices, startServer } from '../server.js';

const USAGE = `usage: rastro <command>

commands:
  serve           migrate, then serve the HTTP API (PORT, HOST)
  migrate         apply pending migrations and exit
  store status    show what holds event readers back
  store rebase    after restoring a dump into another cluster: make new events sort after restored ones
  snapshots rebuild    drop account snapshots and rebuild them from the events
  live <processor> [--policy policy.json]
                  run a processor live, tailing the log
  replay <processor> --from <ts> --to <ts> [--run-id ID] [--simulate] [--policy policy.json]
                  run a processor over a window with its own run id and checkpoint
  replay diff <runId> [--csv]     what a simulated run would change
  effects list [--state reserved|done|uncertain]
  effects resolve <key> --as done|retry
  parked list [--run-id ID] | parked retry <eventId> | parked skip <eventId>
  sweep           move abandoned reservations: keep → uncertain, release → released
  demo commission run the commission story end to end on an embedded database

  --processors <path> loads processors from a module; by default from ./rastro.config.js or .ts
  idempotency cleanup  delete expired idempotency keys (serve also does this every 10 minutes)

environment:
  DATABASE_URL      postgres:// URL; without it rastro uses embedded PGlite in RASTRO_DATA_DIR (./.rastro)
  RASTRO_SCHEMA     schema for rastro's tables (rastro)
  PORT, HOST        where serve listens (3000, 127.0.0.1)
  RASTRO_LOG_LEVEL  fatal|error|warn|info|debug|trace|silent (info)
  RASTRO_API_KEY    bearer key for every route but /healthz; required for a non-loopback HOST
  RASTRO_SNAPSHOT_EVERY           account snapshot interval in events, 0 = off (100)
  RASTRO_IDEMPOTENCY_TTL_SECONDS  how long idempotency keys are kept (86400)`;

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

async function withServices<T>(fn: (services: Services) => Promise<T>): Promise<T> {
  const opened = await openServices(resolveConfig({ logLevel: 'silent' }));
  try {
    return await fn(opened);
  } finally {
    await opened.db.close();
  }
}

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
    },
  });
  const [command, sub] = positionals;
  const rest = positionals.slice(1);
  const processing = { replay: replayCommand, effects: effectsCommand, parked: parkedCommand, live: liveCommand } as const;
  if (command && command in processing) {
    return withServices(({ store }) => processing[command as keyof typeof processing](store, rest, values));
  }
  if (command === 'sweep') return withServices(({ store }) => sweepCommand(store));
  if (command === 'demo' && sub === 'commission') return runCommissionDemo();
  if (command === 'serve') return serve();
  if (command === 'migrate') {
    await withServices(async () => undefined);
    console.log('migrations applied');
    return;
  }
  if (command === 'store' && sub === 'status') {
    const delay = await withServices(({ store }) => store.readerDelay());
    console.log(`events held back from readers: ${delay.heldBack}`);
    console.log(`oldest open writing transaction: ${delay.oldestWriterMs === null ? 'none' : `${delay.oldestWriterMs} ms`}`);
    console.log(`oldest prepared transaction: ${delay.oldestPreparedMs === null ? 'none' : `${delay.oldestPreparedMs} ms`}`);
    return;
  }
  if (command === 'snapshots' && sub === 'rebuild') {
    const { dropped, written } = await withServices(({ ledger }) => ledger.rebuildSnapshots());
    console.log(`account snapshots: ${dropped} dropped, ${written} written from the events`);
    return;
  }
  if (command === 'idempotency' && sub === 'cleanup') {
    const removed = await withServices(({ keys }) => keys.cleanup());
    console.log(`expired idempotency keys removed: ${removed}`);
    return;
  }
  if (command === 'store' && sub === 'rebase') {
    const config = resolveConfig({ logLevel: 'silent' });
    const { openDatabase } = await import('../db/open-database.js');
    const { migrate } = await import('../db/migrate.js');
    const { createEventStore } = await import('../store/event-store.js');
    const db = await openDatabase({ url: config.databaseUrl });
    try {
      await migrate(db, { schema: config.schema });
      const offset = await createEventStore(db, { schema: config.schema }).rebaseTransactionOrder();
      console.log(`transaction order offset is now ${offset}; readers resume from their checkpoints`);
    } finally {
      await db.close();
    }
    return;
  }
  if (command === undefined || command === 'help') {
    console.log(USAGE);
    return;
  }
  console.error(`rastro: unknown command ${positionals.join(' ')}\n\n${USAGE}`);
  process.exitCode = 2;
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof RastroError) console.error(`rastro: ${err.message} [${err.code}]`);
  else console.error(`rastro: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
