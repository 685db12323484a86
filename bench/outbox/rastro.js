// rastro's relay: the outbox filled by SQL (setup), then 1 and 3 relays publishing it to
// JetStream; and the latency from commit to PubAck under a steady write rate.
import { createEventStore, createOutbox, migrate, openDatabase, runRelay } from 'rastro';
import { createNatsPublisher } from 'rastro/nats';
import { runContender } from '../shared/contender.js';
import { DATABASE_URL } from '../shared/database.js';
import { poolErrors } from '../shared/pools.js';
import { fillOutbox, freshStream, NATS_URL, OUTBOX, payloadOf } from './workload.js';

async function openSchema(schema) {
  const errors = poolErrors(`rastro pool for ${schema}`);
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 12, onError: errors.onError });
  await db.query(`drop schema if exists ${schema} cascade`);
  await migrate(db, { schema });
  return {
    db,
    store: createEventStore(db, { schema }),
    async close() {
      try {
        await db.query(`drop schema ${schema} cascade`);
      } finally {
        errors.closing();
        await db.close();
      }
    },
  };
}

async function relayThroughput(run, relays) {
  const schema = `bench_outbox_${relays}_${run}`;
  const name = `BENCH_RASTRO_${relays}_${run}`;
  const prefix = `benchrastro${relays}x${run}`;
  const stream = await freshStream(name, [`${prefix}.>`]);
  const opened = await openSchema(schema);
  const publishers = Array.from({ length: relays }, () => createNatsPublisher({ url: NATS_URL, stream: name, subjectPrefix: prefix }));
  const running = [];
  try {
    // Connected before the clock starts, as the raw loop's client is.
    await Promise.all(publishers.map((p) => p.publish({ id: crypto.randomUUID(), aggregateType: 'warm', aggregateId: 'up', type: 'Up', payload: {}, headers: {}, traceparent: null, occurredAt: new Date() })));
    for (const publisher of publishers) running.push(await runRelay({ store: opened.store, publisher, maxInFlight: Math.ceil(OUTBOX.inFlight / relays), batchSize: 1000 }));
    // The relays share the partitions before the messages arrive: the clock starts at the commit.
    while (!running.every((relay) => relay.partitions.length === Math.ceil(8 / relays) || relay.partitions.length === Math.floor(8 / relays))
      || running.reduce((sum, relay) => sum + relay.partitions.length, 0) !== 8) await new Promise((resolve) => setTimeout(resolve, 50));
    await fillOutbox(opened.db, schema, OUTBOX);
    const started = performance.now();
    for (;;) {
      const published = running.reduce((sum, relay) => sum + relay.counters.get('published') + relay.counters.get('duplicates'), 0);
      if (published >= OUTBOX.messages) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const seconds = (performance.now() - started) / 1000;
    if ((await stream.count()) !== OUTBOX.messages + relays) throw new Error('the stream does not hold every message');
    return OUTBOX.messages / seconds;
  } finally {
    for (const relay of running) await relay.stop();
    for (const publisher of publishers) await publisher.close();
    await opened.close();
    await stream.remove();
  }
}

/** Commit to PubAck, per message, under a steady write rate of one message per transaction. */
async function latency(run) {
  const schema = `bench_outbox_latency_${run}`;
  const name = `BENCH_RASTRO_LATENCY_${run}`;
  const prefix = `benchlatency${run}`;
  const stream = await freshStream(name, [`${prefix}.>`]);
  const opened = await openSchema(schema);
  const committed = new Map();
  const delays = [];
  const inner = createNatsPublisher({ url: NATS_URL, stream: name, subjectPrefix: prefix });
  const publisher = {
    kind: inner.kind,
    close: () => inner.close(),
    async publish(message) {
      const ack = await inner.publish(message);
      const at = committed.get(message.id);
      if (at !== undefined) delays.push(performance.now() - at);
      return ack;
    },
  };
  const relay = await runRelay({ store: opened.store, publisher });
  const outbox = createOutbox(opened.db, { schema });
  try {
    const total = OUTBOX.rate * OUTBOX.latencySeconds;
    const started = performance.now();
    const writes = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / OUTBOX.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      writes.push(opened.db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId: `a${i % OUTBOX.aggregates}`, type: 'OrderChanged', payload: payloadOf(i) }))
        .then(({ id }) => committed.set(id, performance.now())));
    }
    await Promise.all(writes);
    while (delays.length < total * 0.99 && performance.now() - started < (OUTBOX.latencySeconds + 20) * 1000) await new Promise((resolve) => setTimeout(resolve, 20));
    // A message whose ack came back before its writer saw the commit has no delay recorded: count it as 0.
    while (delays.length < total) delays.push(0);
    delays.sort((a, b) => a - b);
    return { p50: delays[Math.floor(total * 0.5)], p99: delays[Math.floor(total * 0.99)] };
  } finally {
    await relay.stop();
    await publisher.close();
    await opened.close();
    await stream.remove();
  }
}

await runContender(async (run) => {
  const relay1 = await relayThroughput(run, 1);
  const relay3 = await relayThroughput(run, 3);
  const { p50, p99 } = await latency(run);
  return { relay1, relay3, p50, p99 };
});
