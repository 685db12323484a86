// The baseline: the official JetStream client publishing to the same kind of stream (R1 on one
// server, R3 on a three-node cluster), msgID set, every PubAck awaited: throughput with 256
// publishes in flight, and submit-to-PubAck latency at a steady rate.
import { randomUUID } from 'node:crypto';
import { connect, headers } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { runContender } from '../shared/contender.js';
import { startNats } from './servers.js';
import { CLUSTER, payloadOf, percentile, readyManager, streamReady } from './workload.js';

async function measure(replicas) {
  const servers = await startNats(replicas);
  const nc = await connect({ servers: servers.url.split(','), maxReconnectAttempts: -1 });
  try {
    const jsm = await readyManager(nc);
    await jsm.streams.add({ name: 'RAW', subjects: ['raw.>'], num_replicas: replicas, duplicate_window: 120e9 });
    await streamReady(servers.url, 'RAW', replicas);
    const js = jetstream(nc);
    const publish = (i) => {
      const h = headers();
      h.set('rastro-aggregate-id', `a${i % CLUSTER.aggregates}`);
      return js.publish('raw.order.OrderChanged', JSON.stringify(payloadOf(i)), { msgID: randomUUID(), headers: h });
    };
    let next = 0;
    const started = performance.now();
    await Promise.all(Array.from({ length: CLUSTER.inFlight }, async () => {
      while (next < CLUSTER.messages) await publish(next++);
    }));
    const throughput = CLUSTER.messages / ((performance.now() - started) / 1000);
    const delays = [];
    const total = CLUSTER.rate * CLUSTER.latencySeconds;
    const paced = performance.now();
    const sends = [];
    for (let i = 0; i < total; i++) {
      const wait = paced + (i * 1000) / CLUSTER.rate - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const at = performance.now();
      sends.push(publish(CLUSTER.messages + i).then(() => delays.push(performance.now() - at)));
    }
    await Promise.all(sends);
    if ((await jsm.streams.info('RAW')).state.messages !== CLUSTER.messages + total) throw new Error(`the R${replicas} stream does not hold every message`);
    delays.sort((a, b) => a - b);
    return { throughput, p50: percentile(delays, 0.5), p99: percentile(delays, 0.99) };
  } finally {
    await nc.close();
    await servers.close();
  }
}

await runContender(async () => {
  const r1 = await measure(1);
  const r3 = await measure(3);
  return { thrR1: r1.throughput, thrR3: r3.throughput, p50R1: r1.p50, p99R1: r1.p99, p50R3: r3.p50, p99R3: r3.p99, thrCost: r3.throughput / r1.throughput, p99Cost: r3.p99 / r1.p99 };
});
