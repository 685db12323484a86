import { Option, type Command } from 'commander';
import { openPublisher } from '../brokers/open-broker.js';
import type { RastroConfig } from '../config.js';
import { relayAdmin } from 'rastro/internal/outbox/relay-admin.js';
import { outboxRetention } from 'rastro/internal/outbox/retention.js';
import { runRelay, type Relay } from 'rastro/internal/outbox/relay.js';
import type { EventLogSelection } from 'rastro/internal/outbox/relay-source.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { group } from './command-tree.js';
import { jsonOption, limitOption, wholeNumber } from './options.js';
import { printList } from './output.js';
import { showWhileRunning, startProgress } from './progress.js';
import { withRoleStore, withStore } from './services.js';
import { stopSignal } from './stop-signal.js';
import { UsageError } from './usage-error.js';

interface RelayOptions {
  name?: string;
  partitions: number;
  types?: string;
  streamPrefix?: string;
  aggregateType?: string;
}

function selection(options: RelayOptions): EventLogSelection | undefined {
  if (options.types === undefined && options.streamPrefix === undefined) {
    if (options.aggregateType !== undefined) throw new UsageError('--aggregate-type applies to a relay from the log: add --types or --stream-prefix');
    return undefined;
  }
  return { types: options.types?.split(',').filter(Boolean), streamPrefix: options.streamPrefix, aggregateType: options.aggregateType };
}

const countersLine = (relay: Relay) => relay.counters.entries().map(([name, value]) => `${name} ${value}`).join(', ');

/** `rastro relay`: publishes until stopped, its counters as progress on stderr every 10 s. */
async function relay(store: EventStore, config: RastroConfig, options: RelayOptions): Promise<void> {
  const events = selection(options);
  const progress = startProgress({ pipedEveryMs: 10_000 });
  const publisher = openPublisher(config, { onWarning: (message) => progress.note(`rastro relay: warning: ${message}`) });
  const relay = await runRelay({
    store, publisher, name: options.name, events, partitions: options.partitions,
    onError: (err) => progress.note(`rastro relay: ${err instanceof Error ? err.message : String(err)} (backing off, will retry)`),
  });
  console.log(`relay ${relay.runId} publishing to ${config.brokerUrl ? publisher.kind : 'the in-process publisher (set RASTRO_BROKER_URL for a broker)'}`);
  if (!config.brokerUrl) {
    process.stderr.write('warning: without RASTRO_BROKER_URL this relay marks messages published in this process only; no other process receives them\n');
  }
  const stopShowing = showWhileRunning(progress, () => {
    const line = countersLine(relay);
    return line && `relay ${relay.runId}: ${line} (partitions ${relay.partitions.join(',') || 'none'})`;
  });
  await stopSignal();
  stopShowing();
  await relay.stop();
  await publisher.close();
  console.log(`relay stopped: ${countersLine(relay) || 'nothing published'}`);
}

async function status(store: EventStore, options: { json?: boolean }): Promise<void> {
  printList(await relayAdmin(store).status(), options, {
    empty: 'no relay has run yet',
    headers: ['relay', 'status', 'source', 'pending', 'lag', 'parked', 'published', 'duplicates', 'failed'],
    row: (r) => [r.name, r.since ? `${r.status} since ${r.since.toISOString()}` : r.status, r.source, r.pending, r.lagMs === null ? '-' : `${(r.lagMs / 1000).toFixed(1)} s`, r.parked, r.counters.published ?? 0, r.counters.duplicates ?? 0, r.counters.failed ?? 0],
  });
}

async function listParked(store: EventStore, options: { relay?: string; limit: number; json?: boolean }): Promise<void> {
  printList(await relayAdmin(store).parked({ relay: options.relay, limit: options.limit }), options, {
    empty: 'no parked messages',
    headers: ['relay', 'message', 'aggregate', 'reason', 'error'],
    row: (p) => [p.relay, p.messageId, p.aggregateKey, p.reason, p.error],
  });
}

const unpark = (action: 'retry' | 'skip') => (id: string) =>
  withStore(async (store, config) => {
    const publisher = openPublisher(config);
    try {
      const admin = relayAdmin(store);
      const outcome = action === 'retry' ? await admin.retry(id, publisher) : await admin.skip(id, publisher);
      console.log(`${action === 'skip' ? 'skipped 1, ' : ''}published ${outcome.published}, still parked ${outcome.stillParked}`);
    } finally {
      await publisher.close();
    }
  });

async function cleanup(store: EventStore, config: RastroConfig, options: { days?: number }): Promise<void> {
  const days = options.days ?? config.outboxRetentionDays;
  const retention = outboxRetention(store);
  if (config.outboxRetention === 'daily-partitions') {
    const { dropped, kept } = await retention.dropExpiredPartitions({ days });
    const created = await retention.ensureDailyPartitions();
    console.log(`daily partitions: ${dropped.length} dropped, ${kept.length} kept (unpublished messages), ${created.length} created`);
  }
  const progress = startProgress();
  const deleted = await retention.deletePublished({ days, onProgress: (n) => progress.show(`${n} published messages deleted`) });
  progress.end();
  console.log(`published messages older than ${days} days deleted: ${deleted}`);
}

/** `rastro relay`, `rastro outbox …`. */
export function registerOutboxCommands(program: Command): void {
  program.command('relay')
    .summary('publish the outbox (or chosen events) to RASTRO_BROKER_URL until stopped')
    .description('publish the outbox to RASTRO_BROKER_URL until stopped (SIGINT/SIGTERM); with --types or --stream-prefix, publish those events of the log instead. Relays of one name share the work.')
    .option('--name <name>', 'the relay\'s name: relays of one name share the partitions (default outbox, or events for a relay from the log)')
    .addOption(new Option('--partitions <n>', 'partitions of the work').argParser(wholeNumber('--partitions', { min: 1 })).default(8))
    .option('--types <a,b>', 'relay these event types from the log')
    .option('--stream-prefix <prefix>', 'relay the events of streams with this prefix from the log')
    .option('--aggregate-type <type>', 'the aggregate type of messages relayed from the log')
    .action((options: RelayOptions) => withRoleStore('relay', (store, config) => relay(store, config, options)));
  const outbox = group(program, 'outbox', 'the outbox and its relays');
  outbox.command('status').description("relays' lag, pending and parked messages, counts").addOption(jsonOption())
    .action((options: { json?: boolean }) => withStore((store) => status(store, options)));
  const parked = group(outbox, 'parked', 'messages a relay parked');
  parked.command('list', { isDefault: true }).description("parked messages, with the broker's error")
    .option('--relay <name>', 'only those of this relay').addOption(limitOption(1000)).addOption(jsonOption())
    .action((options: { relay?: string; limit: number; json?: boolean }) => withStore((store) => listParked(store, options)));
  parked.command('retry').description("publish its aggregate's parked messages again, in order").argument('<messageId>', 'the parked message id').action(unpark('retry'));
  parked.command('skip').description('never publish this one; retry the rest of its aggregate').argument('<messageId>', 'the parked message id').action(unpark('skip'));
  outbox.command('cleanup').description('delete published messages older than N days')
    .addOption(new Option('--days <n>', 'age in days (default RASTRO_OUTBOX_RETENTION_DAYS, 7)').argParser(wholeNumber('--days')))
    .action((options: { days?: number }) => withStore((store, config) => cleanup(store, config, options)));
}
