// The cluster section's workload: smaller than the outbox section's, since an R3 stream on a
// 2-core machine shares it with three servers.
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';

export const CLUSTER = {
  messages: 10_000,
  aggregates: 500,
  inFlight: 256,
  rate: 500,
  latencySeconds: 6,
};

/** A payload of about 200 bytes, as the outbox section's. */
export { payloadOf } from '../outbox/workload.js';

/** Waits until the stream has a leader and every replica is current. */
export async function streamReady(url, name, replicas) {
  const nc = await connect({ servers: url.split(',') });
  try {
    const jsm = await readyManager(nc);
    for (let i = 0; i < 400; i++) {
      const info = await jsm.streams.info(name).catch(() => undefined);
      const others = info?.cluster?.replicas ?? [];
      if (info && (replicas === 1 || (info.cluster?.leader && others.length === replicas - 1 && others.every((r) => r.current)))) return info.state.messages;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`stream ${name} did not get ${replicas} current replicas`);
  } finally {
    await nc.close();
  }
}

/** Percentile of sorted delays. */
export const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

/** A JetStream manager once JetStream answers: a cluster just started is still electing its metadata leader. */
export async function readyManager(nc) {
  for (let i = 0; ; i++) {
    try {
      const jsm = await jetstreamManager(nc, { timeout: 2000 });
      await jsm.getAccountInfo();
      return jsm;
    } catch (err) {
      if (i > 30) throw new Error(`JetStream did not answer: ${err.message}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
