import type { Command } from 'commander';
import { openConsumer } from '../brokers/open-broker.js';
import type { RastroConfig } from '../config.js';
import { quoteSchema } from '../db/schema-name.js';
import { consumeIntoStore } from '../inbox/consume-into-store.js';
import type { EventStore } from '../store/event-store.js';
import { group } from './command-tree.js';
import { jsonOption, limitOption } from './options.js';
import { printList } from './output.js';
import { withRoleStore, withStore } from './services.js';
import { stopSignal } from './stop-signal.js';

/** `rastro consume`: the inbox, until stopped. */
async function consume(store: EventStore, config: RastroConfig, options: { queue?: string; durable?: string }): Promise<void> {
  const inbox = consumeIntoStore({
    store, consumer: openConsumer(config, { queue: options.queue, durable: options.durable }),
    onError: (err) => console.error(`rastro consume: ${err instanceof Error ? err.message : String(err)} (will retry)`),
  });
  console.log(`consuming from ${config.brokerUrl!.split('://')[0]} into schema ${store.schema}`);
  await Promise.race([stopSignal(), inbox.done]);
  await inbox.stop();
  console.log(`inbox stopped: ${inbox.counts.stored} stored, ${inbox.counts.duplicates} duplicates, ${inbox.counts.deadLettered} dead-lettered`);
}

interface DeadLetter {
  id: number;
  broker: string;
  source: string;
  message_id: string | null;
  reason: string;
  received_at: Date;
}

async function deadLetters(store: EventStore, options: { limit: number; json?: boolean }): Promise<void> {
  const { rows } = await store.db.query<DeadLetter>(
    `select id, broker, source, message_id, reason, received_at from ${quoteSchema(store.schema)}.inbox_dead_letters order by id desc limit $1`,
    [options.limit],
  );
  printList(rows, options, {
    empty: 'no dead letters',
    headers: ['id', 'broker', 'source', 'message', 'reason', 'received'],
    row: (r) => [r.id, r.broker, r.source, r.message_id, r.reason, r.received_at.toISOString()],
  });
}

/** `rastro consume`, `rastro inbox dead-letters`. */
export function registerInboxCommands(program: Command): void {
  program.command('consume')
    .summary('the inbox: append broker messages to the log, exactly once')
    .description('the inbox: append each message of RASTRO_BROKER_URL to the log as an event with the message id, until stopped')
    .option('--queue <queue>', 'the RabbitMQ queue to consume')
    .option('--durable <name>', 'the NATS JetStream durable consumer')
    .action((options: { queue?: string; durable?: string }) => withRoleStore('consume', (store, config) => consume(store, config, options)));
  group(program, 'inbox', 'the inbox').command('dead-letters').description('messages the inbox could not store, with the reason')
    .addOption(limitOption(100)).addOption(jsonOption())
    .action((options: { limit: number; json?: boolean }) => withStore((store) => deadLetters(store, options)));
}
