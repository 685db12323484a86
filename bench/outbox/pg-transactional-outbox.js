// pg-transactional-outbox 0.5.7, the rival: its polling listener (`initializePollingMessageListener`)
// publishing its outbox table to JetStream, 1 and 3 listeners on one table; and the latency from
// commit to PubAck with one message per transaction written by its `initializeMessageStorage`.
//
// Each run creates a schema of its own with the library's `DatabaseSetup` SQL (table, the
// `next_outbox_messages` polling function, its indexes) and drops it afterwards.
//
// Pools: the library creates two pg pools per listener itself. The handler pool (one connection
// per message being handled: the handler runs inside the transaction that locks the message row
// and marks it processed) is replaced through its `messageProcessingDbClientStrategy` by a pool the
// bench creates and guards. The polling pool cannot be handed in; it has an 'error' listener of
// the library's, which logs to the logger given here, and every error the library logs while the
// bench is at work fails the contender (through the same `poolErrors` guard). Only a schema is
// dropped afterwards, never a database, so no connection is terminated at drop time.
import { randomUUID } from 'node:crypto';
import { connect, headers } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import pg from 'pg';
import { DatabaseSetup, executeTransaction, initializeMessageStorage, initializePollingMessageListener } from 'pg-transactional-outbox';
import { runContender } from '../shared/contender.js';
import { DATABASE_URL, withClient } from '../shared/database.js';
import { guardPool, poolErrors } from '../shared/pools.js';
import { freshStream, NATS_URL, OUTBOX, payloadOf } from './workload.js';

/**
 * The library's settings. Its defaults (5 messages per batch, a poll every 500 ms, a 5 s lock) are
 * for a light background sender; these were chosen by measuring (a) on this machine:
 * - BATCH (nextMessagesBatchSize) = 64 messages in flight for one listener, 22 each for three: the
 *   listener's processing pool holds up to this many messages and polls for more as each one
 *   finishes, so this is its in-flight limit. Each message in flight holds a handler connection for
 *   the length of its transaction (lock the row, publish, await the PubAck, mark it processed): one
 *   listener with 256 in flight on 16 connections relayed 375-440/s, 16 on 16 about 310/s, 64 on
 *   32 about 830/s, 128 on 32 or 100 on 50 about 775/s. Past twice the connections, more messages
 *   in flight only wait for a connection and lose the race for their row lock (below).
 * - CONNECTIONS = 32 handler connections for one listener, 11 each for three (the same budget split,
 *   as the raw loop's and rastro's 256 publishes in flight are): the server allows 100 and is shared.
 * - POLL_MS (nextMessagesPollingIntervalInMs) = 10: the wait before the next poll when fewer
 *   messages than the batch are in flight; a finished message starts the next poll at once, so this
 *   only bounds the delay of a message that arrives while the listener is idle. An idle outbox is
 *   polled 100 times a second.
 * - LOCK_MS (nextMessagesLockInMs) = 1000: the polling function takes a `FOR NO KEY UPDATE NOWAIT`
 *   row lock on every aggregate's oldest message, in flight or not, for the length of its
 *   transaction; a handler that starts meanwhile fails its own NOWAIT lock, and the message is
 *   retried once its lock expires, holding up its aggregate until then. 1 s is well above the time a
 *   message waits for a connection and its publish (tens of ms); the default 5 s gave about 600/s
 *   instead of 830/s.
 */
const BATCH = 64;
const CONNECTIONS = 32;
const POLL_MS = 10;
const LOCK_MS = 1000;
const TABLE = 'outbox';
const FUNCTION = 'next_outbox_messages';

/** A pino-shaped logger: errors fail the contender while it is at work, warnings are counted. */
function benchLogger(label) {
  const errors = poolErrors(label);
  const counts = { warn: 0 };
  const fail = (first, second) => {
    const err = first instanceof Error ? first : undefined;
    const text = typeof second === 'string' ? second : typeof first === 'string' ? first : 'an error';
    errors.onError(new Error(`${text}${err ? `: ${err.message}` : ''}`, { cause: err }));
  };
  const none = () => undefined;
  return {
    logger: { level: 'warn', fatal: fail, error: fail, warn: () => (counts.warn += 1), info: none, debug: none, trace: none, silent: none },
    counts,
    closing: errors.closing,
  };
}

async function createSchema(schema) {
  const setup = { outboxOrInbox: 'outbox', database: 'test', schema, table: TABLE, listenerRole: 'postgres', nextMessagesSchema: schema, nextMessagesName: FUNCTION };
  await withClient(async (client) => {
    await client.query(`drop schema if exists ${schema} cascade`);
    // The index SQL drops its indexes by unqualified name: the search path keeps it in this schema.
    await client.query('begin');
    await client.query(`create schema ${schema}`);
    await client.query(`set local search_path to ${schema}`);
    await client.query(DatabaseSetup.dropAndCreateTable(setup));
    await client.query(DatabaseSetup.createPollingFunction(setup));
    await client.query(DatabaseSetup.setupPollingIndexes(setup));
    await client.query('commit');
  });
}

const dropSchema = (schema) => withClient((client) => client.query(`drop schema if exists ${schema} cascade`));

const configOf = (schema, batchSize) => ({
  outboxOrInbox: 'outbox',
  // One poll at a time per listener: the polling pool needs no more than two connections.
  dbListenerConfig: { connectionString: DATABASE_URL, max: 2 },
  settings: {
    dbSchema: schema,
    dbTable: TABLE,
    nextMessagesFunctionSchema: schema,
    nextMessagesFunctionName: FUNCTION,
    nextMessagesBatchSize: batchSize,
    nextMessagesPollingIntervalInMs: POLL_MS,
    nextMessagesLockInMs: LOCK_MS,
    // Its outbox defaults: no attempt limits, no poisonous-message bookkeeping; no cleanup timer.
    enableMaxAttemptsProtection: false,
    enablePoisonousMessageProtection: false,
    messageCleanupIntervalInMs: 0,
  },
});

/**
 * One polling listener publishing to JetStream on a NATS connection of its own, with the handler
 * pool the bench guards. `onAck(id)` is called once JetStream acknowledged a message.
 */
async function startListener({ schema, batchSize, connections, prefix, label, onAck }) {
  const log = benchLogger(`pg-transactional-outbox ${label}`);
  const nc = await connect({ servers: NATS_URL });
  const js = jetstream(nc);
  const guarded = guardPool(new pg.Pool({ connectionString: DATABASE_URL, max: connections }), `pg-transactional-outbox handler pool (${label})`);
  // Connected before the clock starts, as the raw loop's client is.
  await js.publish(`${prefix}.warm.Up`, '{}', { msgID: randomUUID() });
  const warm = await Promise.all(Array.from({ length: connections }, () => guarded.pool.connect()));
  for (const client of warm) client.release();

  const publisher = {
    async handle(message) {
      const h = headers();
      h.set('aggregate-id', message.aggregateId);
      await js.publish(`${prefix}.${message.aggregateType}.${message.messageType}`, JSON.stringify(message.payload), { msgID: message.id, headers: h });
      onAck(message.id);
    },
  };
  // pg-pool leaves a checked-out client without an 'error' listener: the logger's fails the run.
  const watched = new WeakSet();
  async function getClient() {
    const client = await guarded.pool.connect();
    if (!watched.has(client)) {
      watched.add(client);
      client.on('error', (err) => log.logger.error(err, 'a handler connection failed'));
    }
    return client;
  }
  const [shutdown] = initializePollingMessageListener(configOf(schema, batchSize), publisher, log.logger, {
    messageProcessingDbClientStrategy: { getClient, shutdown: () => guarded.end() },
    // The default strategy asks for one message per poll for the first `batchSize` polls, a guard
    // against poisonous messages, which this outbox does not track: the full batch from the start.
    batchSizeStrategy: () => Promise.resolve(batchSize),
    // enableMaxAttemptsProtection: false is not read by 0.5.7's default retry strategy, which gives a
    // message up after 5 attempts whatever the setting: this one honours it and always retries.
    messageRetryStrategy: () => true,
  });
  return {
    warnings: () => log.counts.warn,
    async stop() {
      log.closing();
      try {
        await shutdown();
      } finally {
        await guarded.end();
        await nc.close();
      }
    },
  };
}

/** The rows the library's storage function would write, by SQL in one transaction. */
async function fill(schema) {
  await withClient((client) => client.query(`insert into ${schema}.${TABLE} (id, aggregate_type, aggregate_id, message_type, segment, payload)
    select gen_random_uuid(), 'order', 'a' || (g % $2), 'OrderChanged', 'a' || (g % $2),
           jsonb_build_object('orderId', 'o' || g, 'amountCents', 10000 + g % 1000, 'status', 'paid', 'note', repeat('x', 120))
      from generate_series(0, $1 - 1) g`, [OUTBOX.messages, OUTBOX.aggregates]));
}

async function waitFor(done, what, progress) {
  let last = progress();
  let lastChange = performance.now();
  while (!done()) {
    await new Promise((resolve) => setTimeout(resolve, 2));
    const now = progress();
    if (now !== last) {
      last = now;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > 30_000) {
      throw new Error(`pg-transactional-outbox: ${what} stalled at ${now} for 30 s`);
    }
  }
}

async function relayThroughput(run, listeners) {
  const schema = `bench_pgto_${listeners}_${run}`;
  const name = `BENCH_PGTO_${listeners}_${run}`;
  const prefix = `benchpgto${listeners}x${run}`;
  const stream = await freshStream(name, [`${prefix}.>`]);
  await createSchema(schema);
  const acked = new Set();
  const running = [];
  try {
    const batchSize = Math.ceil(BATCH / listeners);
    const connections = Math.ceil(CONNECTIONS / listeners);
    for (let i = 0; i < listeners; i++) {
      running.push(await startListener({ schema, batchSize, connections, prefix, label: `listener ${i + 1} of ${listeners}`, onAck: (id) => acked.add(id) }));
    }
    await fill(schema);
    const started = performance.now();
    await waitFor(() => acked.size >= OUTBOX.messages, `relay with ${listeners} listener(s)`, () => acked.size);
    const seconds = (performance.now() - started) / 1000;
    if ((await stream.count()) !== OUTBOX.messages + listeners) throw new Error('pg-transactional-outbox: the stream does not hold every message');
    const warnings = running.reduce((sum, listener) => sum + listener.warnings(), 0);
    if (warnings > 0) console.error(`pg-transactional-outbox: ${warnings} message(s) retried with ${listeners} listener(s)`);
    return OUTBOX.messages / seconds;
  } finally {
    for (const listener of running) await listener.stop();
    await dropSchema(schema);
    await stream.remove();
  }
}

/** Commit to PubAck, per message, under a steady write rate of one message per transaction. */
async function latency(run) {
  const schema = `bench_pgto_latency_${run}`;
  const name = `BENCH_PGTO_LATENCY_${run}`;
  const prefix = `benchpgtolatency${run}`;
  const stream = await freshStream(name, [`${prefix}.>`]);
  await createSchema(schema);
  const committed = new Map();
  const acked = new Set();
  const delays = [];
  const writers = guardPool(new pg.Pool({ connectionString: DATABASE_URL, max: 10 }), 'pg-transactional-outbox writer pool');
  const log = benchLogger('pg-transactional-outbox storage');
  let listener;
  try {
    listener = await startListener({
      schema,
      batchSize: BATCH,
      connections: CONNECTIONS,
      prefix,
      label: 'latency listener',
      onAck(id) {
        acked.add(id);
        const at = committed.get(id);
        if (at !== undefined) delays.push(performance.now() - at);
      },
    });
    const store = initializeMessageStorage(configOf(schema, BATCH), log.logger);
    const total = OUTBOX.rate * OUTBOX.latencySeconds;
    const started = performance.now();
    const writes = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / OUTBOX.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const id = randomUUID();
      const aggregateId = `a${i % OUTBOX.aggregates}`;
      const message = { id, aggregateType: 'order', aggregateId, messageType: 'OrderChanged', segment: aggregateId, payload: payloadOf(i) };
      writes.push(writers.pool.connect()
        .then((client) => executeTransaction(client, (tx) => store(message, tx)))
        .then(() => committed.set(id, performance.now())));
    }
    await Promise.all(writes);
    while (delays.length < total * 0.99 && performance.now() - started < (OUTBOX.latencySeconds + 20) * 1000) await new Promise((resolve) => setTimeout(resolve, 20));
    // Every message acknowledged before the listener stops, so none is in flight at shutdown.
    await waitFor(() => acked.size >= total, 'latency relay', () => acked.size);
    // A message whose ack came back before its writer saw the commit has no delay recorded: count it as 0.
    while (delays.length < total) delays.push(0);
    delays.sort((a, b) => a - b);
    return { p50: delays[Math.floor(total * 0.5)], p99: delays[Math.floor(total * 0.99)] };
  } finally {
    log.closing();
    await listener?.stop();
    await writers.end();
    await dropSchema(schema);
    await stream.remove();
  }
}

await runContender(async (run) => {
  const relay1 = await relayThroughput(run, 1);
  const relay3 = await relayThroughput(run, 3);
  const { p50, p99 } = await latency(run);
  return { relay1, relay3, p50, p99 };
});
