import { Option, type Command } from 'commander';
import { isDatabaseUnavailable } from 'rastro/internal/db/database-error.js';
import { takeInboxLease } from 'rastro/internal/inbox/inbox-lease.js';
import { openConsumer } from '../brokers/open-broker.js';
import type { RastroConfig } from '../config.js';
import { quoteSchema } from 'rastro/internal/db/schema-name.js';
import { consumeIntoStore } from 'rastro/internal/inbox/consume-into-store.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { group } from './command-tree.js';
import { jsonOption, limitOption, wholeNumber } from './options.js';
import { printList } from './output.js';
import { withRoleStore, withStore } from './services.js';
import { stopSignal } from './stop-signal.js';

interface ConsumeOptions {
  queue?: string;
  durable?: string;
  ackWait?: number;
  maxAckPending?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `rastro consume`: the inbox, until stopped. Readers of one durable (NATS) or queue (RabbitMQ)
 * take turns: one holds the lease and reads, the others stand by and take over when it stops or
 * dies, so each aggregate's messages reach the log in the broker's order.
 */
async function consume(store: EventStore, config: RastroConfig, options: ConsumeOptions): Promise<void> {
  const broker = config.brokerUrl!.split('://')[0]!;
  const reads = broker === 'nats' ? `durable ${options.durable ?? 'rastro-inbox'} of stream ${config.natsStream}` : `queue ${options.queue ?? 'rastro-inbox'}`;
  const leaseName = `rastro.inbox.${store.schema}.${broker}.${broker === 'nats' ? `${config.natsStream}.${options.durable ?? 'rastro-inbox'}` : options.queue ?? 'rastro-inbox'}`;
  const stopping = new AbortController();
  const stopped = stopSignal().then(() => stopping.abort());
  const totals = { stored: 0, duplicates: 0, deadLettered: 0 };
  const say = (err: unknown) => console.error(`rastro consume: ${err instanceof Error ? err.message : String(err)} (will retry)`);
  while (!stopping.signal.aborted) {
    let lease;
    try {
      lease = await takeInboxLease(store.db, leaseName, {
        signal: stopping.signal,
        onStandby: () => console.log(`standing by: another rastro consume reads the ${reads}; this one takes over when it stops`),
      });
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      say(err);
      await sleep(1000);
      continue;
    }
    if (!lease) break;
    const inbox = consumeIntoStore({
      store, onError: say,
      consumer: openConsumer(config, { queue: options.queue, durable: options.durable, exclusive: true, ackWaitSeconds: options.ackWait ?? config.inboxAckWaitSeconds, maxAckPending: options.maxAckPending ?? config.inboxMaxAckPending }),
    });
    console.log(`consuming from ${broker} into schema ${store.schema} (the ${reads})`);
    const ended = await Promise.race([stopped.then(() => 'stopped'), inbox.done.then(() => 'done'), lease.lost.then(() => 'lost')]);
    await inbox.stop();
    await lease.release();
    for (const name of Object.keys(totals) as (keyof typeof totals)[]) totals[name] += inbox.counts[name];
    if (ended !== 'lost') break;
    console.error('rastro consume: the database connection holding the inbox lease was lost; stopped reading, will take the lease again');
  }
  console.log(`inbox stopped: ${totals.stored} stored, ${totals.duplicates} duplicates, ${totals.deadLettered} dead-lettered`);
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
    .addOption(new Option('--ack-wait <seconds>', "NATS: seconds the durable waits for an acknowledgement before redelivering (default RASTRO_INBOX_ACK_WAIT_SECONDS, 30)").argParser(wholeNumber('--ack-wait', { min: 1, max: 86_400 })))
    .addOption(new Option('--max-ack-pending <n>', 'deliveries held unacknowledged: the durable\'s max_ack_pending on NATS, the prefetch on RabbitMQ (default RASTRO_INBOX_MAX_ACK_PENDING, 256)').argParser(wholeNumber('--max-ack-pending', { min: 1, max: 100_000 })))
    .action((options: ConsumeOptions) => withRoleStore('consume', (store, config) => consume(store, config, options)));
  group(program, 'inbox', 'the inbox').command('dead-letters').description('messages the inbox could not store, with the reason')
    .addOption(limitOption(100)).addOption(jsonOption())
    .action((options: { limit: number; json?: boolean }) => withStore((store) => deadLetters(store, options)));
}
