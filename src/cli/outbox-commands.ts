import { openConsumer, openPublisher } from '../brokers/open-broker.js';
import type { RastroConfig } from '../config.js';
import { consumeIntoStore } from '../inbox/consume-into-store.js';
import { relayAdmin } from '../outbox/relay-admin.js';
import { outboxRetention } from '../outbox/retention.js';
import { runRelay } from '../outbox/relay.js';
import type { EventLogSelection } from '../outbox/relay-source.js';
import { quoteSchema } from '../db/schema-name.js';
import type { EventStore } from '../store/event-store.js';
import { table } from './output.js';
import { UsageError } from './usage-error.js';

export interface OutboxCommandOptions {
  name?: string;
  types?: string;
  'stream-prefix'?: string;
  'aggregate-type'?: string;
  partitions?: string;
  days?: string;
  json?: boolean;
  relay?: string;
  limit?: string;
  queue?: string;
  durable?: string;
}

function count(field: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new UsageError(`${field} must be a whole number, got ${JSON.stringify(value)}`);
  return Number(value);
}

function selection(options: OutboxCommandOptions): EventLogSelection | undefined {
  if (options.types === undefined && options['stream-prefix'] === undefined) {
    if (options['aggregate-type'] !== undefined) throw new UsageError('--aggregate-type applies to a relay from the log: add --types or --stream-prefix');
    return undefined;
  }
  return { types: options.types?.split(',').filter(Boolean), streamPrefix: options['stream-prefix'], aggregateType: options['aggregate-type'] };
}

/** Resolves when the process is asked to stop. */
const stopSignal = () => new Promise<void>((resolve) => {
  process.once('SIGINT', resolve);
  process.once('SIGTERM', resolve);
});

/** `rastro relay`: publishes until stopped. */
export async function relayCommand(store: EventStore, config: RastroConfig, options: OutboxCommandOptions): Promise<void> {
  const publisher = openPublisher(config);
  const relay = await runRelay({
    store, publisher, name: options.name, events: selection(options), partitions: count('--partitions', options.partitions, 8),
    onError: (err) => console.error(`rastro relay: ${err instanceof Error ? err.message : String(err)} (backing off, will retry)`),
  });
  console.log(`relay ${relay.runId} publishing to ${config.brokerUrl ? publisher.kind : 'the in-process publisher (set RASTRO_BROKER_URL for a broker)'}`);
  // Progress: a line every 10 s while it publishes.
  let reported = '';
  const progress = setInterval(() => {
    const line = relay.counters.entries().map(([name, value]) => `${name} ${value}`).join(', ');
    if (line && line !== reported) console.log(`relay ${relay.runId}: ${line} (partitions ${relay.partitions.join(',') || 'none'})`);
    reported = line;
  }, 10_000);
  progress.unref();
  await stopSignal();
  clearInterval(progress);
  await relay.stop();
  await publisher.close();
  console.log(`relay stopped: ${relay.counters.entries().map(([name, value]) => `${name} ${value}`).join(', ') || 'nothing published'}`);
}

async function statusCommand(store: EventStore, options: OutboxCommandOptions): Promise<void> {
  const relays = await relayAdmin(store).status();
  if (options.json) return void console.log(JSON.stringify(relays, null, 2));
  if (relays.length === 0) return void console.log('no relay has run yet');
  console.log(table(['relay', 'source', 'pending', 'lag', 'parked', 'published', 'duplicates', 'failed'], relays.map((r) => [
    r.name, r.source, r.pending, r.lagMs === null ? '-' : `${(r.lagMs / 1000).toFixed(1)} s`, r.parked, r.counters.published ?? 0, r.counters.duplicates ?? 0, r.counters.failed ?? 0,
  ])));
}

async function parkedCommand(store: EventStore, config: RastroConfig, args: string[], options: OutboxCommandOptions): Promise<void> {
  const admin = relayAdmin(store);
  const [action, id] = args;
  if (action === 'list' || action === undefined) {
    const parked = await admin.parked({ relay: options.relay, limit: count('--limit', options.limit, 1000) });
    if (options.json) return void console.log(JSON.stringify(parked, null, 2));
    console.log(parked.length === 0 ? 'no parked messages' : table(['relay', 'message', 'aggregate', 'reason', 'error'], parked.map((p) => [p.relay, p.messageId, p.aggregateKey, p.reason, p.error])));
    return;
  }
  if ((action !== 'retry' && action !== 'skip') || !id) throw new UsageError('usage: rastro outbox parked list | retry <messageId> | skip <messageId>');
  const publisher = openPublisher(config);
  try {
    const outcome = action === 'retry' ? await admin.retry(id, publisher) : await admin.skip(id, publisher);
    console.log(`${action === 'skip' ? 'skipped 1, ' : ''}published ${outcome.published}, still parked ${outcome.stillParked}`);
  } finally {
    await publisher.close();
  }
}

async function cleanupCommand(store: EventStore, config: RastroConfig, options: OutboxCommandOptions): Promise<void> {
  const days = count('--days', options.days, config.outboxRetentionDays);
  const retention = outboxRetention(store);
  if (config.outboxRetention === 'daily-partitions') {
    const { dropped, kept } = await retention.dropExpiredPartitions({ days });
    const created = await retention.ensureDailyPartitions();
    console.log(`daily partitions: ${dropped.length} dropped, ${kept.length} kept (unpublished messages), ${created.length} created`);
  }
  const deleted = await retention.deletePublished({ days, onProgress: (n) => process.stderr.write(process.stderr.isTTY ? `\rdeleted ${n}` : '') });
  if (process.stderr.isTTY) process.stderr.write('\n');
  console.log(`published messages older than ${days} days deleted: ${deleted}`);
}

/** `rastro outbox status | parked … | cleanup`. */
export async function outboxCommand(store: EventStore, config: RastroConfig, args: string[], options: OutboxCommandOptions): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === 'status') return statusCommand(store, options);
  if (sub === 'parked') return parkedCommand(store, config, rest, options);
  if (sub === 'cleanup') return cleanupCommand(store, config, options);
  throw new UsageError('usage: rastro outbox status | parked list|retry|skip | cleanup [--days N]');
}

/** `rastro consume`: the inbox, until stopped. */
export async function consumeCommand(store: EventStore, config: RastroConfig, options: OutboxCommandOptions): Promise<void> {
  const inbox = consumeIntoStore({
    store, consumer: openConsumer(config, { queue: options.queue, durable: options.durable }),
    onError: (err) => console.error(`rastro consume: ${err instanceof Error ? err.message : String(err)} (will retry)`),
  });
  console.log(`consuming from ${config.brokerUrl!.split('://')[0]} into schema ${store.schema}`);
  await Promise.race([stopSignal(), inbox.done]);
  await inbox.stop();
  console.log(`inbox stopped: ${inbox.counts.stored} stored, ${inbox.counts.duplicates} duplicates, ${inbox.counts.deadLettered} dead-lettered`);
}

/** `rastro inbox dead-letters`. */
export async function deadLettersCommand(store: EventStore, options: OutboxCommandOptions): Promise<void> {
  const { rows } = await store.db.query<{ id: number; broker: string; source: string; message_id: string | null; reason: string; received_at: Date }>(
    `select id, broker, source, message_id, reason, received_at from ${quoteSchema(store.schema)}.inbox_dead_letters order by id desc limit $1`,
    [count('--limit', options.limit, 100)],
  );
  if (options.json) return void console.log(JSON.stringify(rows, null, 2));
  console.log(rows.length === 0 ? 'no dead letters' : table(['id', 'broker', 'source', 'message', 'reason', 'received'], rows.map((r) => [r.id, r.broker, r.source, r.message_id, r.reason, r.received_at.toISOString()])));
}
