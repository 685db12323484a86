import { natsReachable, OUTBOX } from './workload.js';

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const rawPublish = { label: 'raw publish', contender: 'raw', key: 'publish' };

/** The outbox section: relay throughput to JetStream against a raw publish loop, and commit-to-ack latency. */
export const outboxSection = {
  name: 'outbox',
  title: 'Outbox relay to NATS JetStream',
  baseline: 'raw',
  subject: 'rastro',
  available: natsReachable,
  contenders: [contender('raw'), contender('rastro')],
  rows: [
    { key: 'relay1', name: '(a) relay throughput, 1 relay', unit: 'messages/s', baseline: rawPublish, minRatio: 0.7 },
    { key: 'relay3', name: '(b) relay throughput, 3 relays', unit: 'messages/s', baseline: rawPublish, minRatio: 0.7 },
    { key: 'p50', name: '(c) commit to PubAck, p50, at 1,000 messages/s', unit: 'ms', baseline: { label: 'target', value: 10 }, maxRatio: 1, target: '< 10 ms' },
    { key: 'p99', name: '(d) commit to PubAck, p99, at 1,000 messages/s', unit: 'ms', baseline: { label: 'target', value: 50 }, maxRatio: 1, target: '< 50 ms' },
  ],
  targets: `
Targets: (a) and (b) ≥ 0.7× the raw publish loop; (c) p50 < 10 ms; (d) p99 < 50 ms.
`,
  notes: `
${OUTBOX.messages.toLocaleString('en-US')} messages of about 200 bytes over ${OUTBOX.aggregates} aggregates, to a JetStream stream made
fresh for each contender run on the machine's NATS server (file storage, 2-minute duplicate window).

- **raw**: the official client (\`@nats-io/jetstream\`) publishing the same messages in a loop with
  ${OUTBOX.inFlight} publishes in flight, \`msgID\` set, every PubAck awaited: the floor any relay pays.
- **rastro**: \`runRelay\` with the NATS publisher, connected and holding its partitions; the outbox
  is then filled by SQL in one transaction, and the clock runs from its commit until every message
  is acknowledged: batches of 1,000 read below the
  frontier, each aggregate's messages one after another (the next after the previous one's ack),
  ${OUTBOX.inFlight} publishes in flight across aggregates, one commit of checkpoints per batch. (b) runs three
  relays of one name in the same process, sharing the 8 partitions (${Math.ceil(OUTBOX.inFlight / 3)} in flight each).
- (c), (d): one writer commits one message per transaction at ${OUTBOX.rate.toLocaleString('en-US')}/s for ${OUTBOX.latencySeconds} s through
  \`outbox.write\`; the delay is from the writer seeing its commit to the relay receiving the PubAck.
  The relay wakes on the NOTIFY sent at commit.

\`pg-transactional-outbox\` installs here (a devDependency) but is not a contender yet: its polling
listener needs a schema and handlers of its own that were not written in this round.
`,
};
