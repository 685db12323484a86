// rastro's relay to a stream it creates with RASTRO_NATS_REPLICAS' setting: R1 on one server, R3
// on a three-node cluster. Throughput: the outbox filled by SQL in one transaction, the clock from
// its commit until every message is acknowledged. Latency: one message per transaction at a
// steady rate, from the writer seeing its commit to the relay receiving the PubAck. On a private
// PostgreSQL server (see postgres.js).
import { createEventStore, createOutbox, migrate, openDatabase, runRelay } from 'rastro';
import { createNatsPublisher } from 'rastro/nats';
import { runContender } from '../shared/contender.js';
import { poolErrors } from '../shared/pools.js';
import { startPostgres } from './postgres.js';
import { startNats } from './servers.js';
import { fillOutbox } from '../outbox/workload.js';
import { CLUSTER, payloadOf, percentile, streamReady } from './workload.js';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function measure(run, replicas) {
  const schema = `bench_cluster_r${replicas}_${run}`;
  const servers = await startNats(replicas);
  const postgres = await startPostgres();
  const errors = poolErrors(`rastro pool for ${schema}`);
  const db = await openDatabase({ url: postgres.url, poolSize: 8, onError: errors.onError });
  const inner = createNatsPublisher({ url: servers.url, replicas, ackTimeoutMs: 10_000 });
  const committed = new Map();
  const delays = [];
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
  let relay;
  try {
    await db.query(`drop schema if exists ${schema} cascade`);
    await migrate(db, { schema });
    // The publisher creates the stream with its replicas on its first publish; the clock starts once they are all current.
    // A cluster just started is still electing its metadata leader: the first publishes may time out.
    for (let i = 0; ; i++) {
      try {
        await inner.publish({ id: crypto.randomUUID(), aggregateType: 'warm', aggregateId: 'up', type: 'Up', payload: {}, headers: {}, traceparent: null, occurredAt: new Date() });
        break;
      } catch (err) {
        if (i >= 10) throw new Error(`the R${replicas} stream could not be created: ${err.message}`);
        await sleep(500);
      }
    }
    await streamReady(servers.url, 'RASTRO', replicas);
    relay = await runRelay({ store: createEventStore(db, { schema }), publisher, maxInFlight: CLUSTER.inFlight, batchSize: 1000 });
    while (relay.partitions.length < 8) await sleep(20);
    await fillOutbox(db, schema, CLUSTER);
    const started = performance.now();
    const sent = () => relay.counters.get('published') + relay.counters.get('duplicates');
    while (sent() < CLUSTER.messages) await sleep(2);
    const throughput = CLUSTER.messages / ((performance.now() - started) / 1000);

    const outbox = createOutbox(db, { schema });
    const total = CLUSTER.rate * CLUSTER.latencySeconds;
    const paced = performance.now();
    const writes = [];
    for (let i = 0; i < total; i++) {
      const wait = paced + (i * 1000) / CLUSTER.rate - performance.now();
      if (wait > 0) await sleep(wait);
      writes.push(db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId: `a${i % CLUSTER.aggregates}`, type: 'OrderChanged', payload: payloadOf(i) }))
        .then(({ id }) => committed.set(id, performance.now())));
    }
    await Promise.all(writes);
    if (process.env.BENCH_DEBUG) console.error(`written ${total} in ${Math.round(performance.now() - paced)} ms; sent ${sent() - CLUSTER.messages}`);
    while (sent() < CLUSTER.messages + total && performance.now() - paced < (CLUSTER.latencySeconds + 30) * 1000) await sleep(20);
    if (sent() < CLUSTER.messages + total) throw new Error(`the relay published ${sent()} of ${CLUSTER.messages + total} messages to the R${replicas} stream`);
    // An ack that came back before its writer saw the commit has no delay recorded: count it as 0.
    while (delays.length < total) delays.push(0);
    delays.sort((a, b) => a - b);
    return { throughput, p50: percentile(delays, 0.5), p99: percentile(delays, 0.99) };
  } finally {
    await relay?.stop();
    await publisher.close();
    await db.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
    errors.closing();
    await db.close();
    await postgres.close();
    await servers.close();
  }
}

await runContender(async (run) => {
  const r1 = await measure(run, 1);
  const r3 = await measure(run, 3);
  return { thrR1: r1.throughput, thrR3: r3.throughput, p50R1: r1.p50, p99R1: r1.p99, p50R3: r3.p50, p99R3: r3.p99, thrCost: r3.throughput / r1.throughput, p99Cost: r3.p99 / r1.p99 };
});
