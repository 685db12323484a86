// The baseline: a raw JetStream publish loop with the official client, the same messages and
// subjects, msgID set, the same number of publishes in flight, every PubAck awaited.
import { randomUUID } from 'node:crypto';
import { headers } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { runContender } from '../shared/contender.js';
import { freshStream, OUTBOX, payloadOf } from './workload.js';

await runContender(async (run) => {
  const name = `BENCH_RAW_${run}`;
  const stream = await freshStream(name, [`benchraw${run}.>`]);
  try {
    const js = jetstream(stream.nc);
    let next = 0;
    const started = performance.now();
    await Promise.all(Array.from({ length: OUTBOX.inFlight }, async () => {
      while (next < OUTBOX.messages) {
        const i = next++;
        const h = headers();
        h.set('rastro-aggregate-id', `a${i % OUTBOX.aggregates}`);
        await js.publish(`benchraw${run}.order.OrderChanged`, JSON.stringify(payloadOf(i)), { msgID: randomUUID(), headers: h });
      }
    }));
    const seconds = (performance.now() - started) / 1000;
    if ((await stream.count()) !== OUTBOX.messages) throw new Error('the stream does not hold every message');
    return { publish: OUTBOX.messages / seconds };
  } finally {
    await stream.remove();
  }
});
