import { natsReachable, OUTBOX } from './workload.js';

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const rawPublish = { label: 'raw publish', contender: 'raw', key: 'publish' };

const RIVAL = 'pg-transactional-outbox';

/** What the latency rows mean for the rival: they measure its backlog when it relays slower than the writer writes. */
function rivalLatencyNote(medians) {
  const relay1 = medians?.[RIVAL]?.relay1;
  if (relay1 === undefined) return '';
  if (relay1 >= OUTBOX.rate) {
    return `Its polling listener relayed ${Math.round(relay1).toLocaleString('en-US')} messages/s in (a), above the write rate: (c) and (d)
  are its polling delay (up to the 10 ms interval while it is idle), its transaction and the publish.`;
  }
  return `Its polling listener relayed ${Math.round(relay1).toLocaleString('en-US')} messages/s in (a) on this machine, below the write rate of
  ${OUTBOX.rate.toLocaleString('en-US')}/s: in (c) and (d) a backlog builds for the ${OUTBOX.latencySeconds} s, and they measure the time a message waits in
  it more than the polling interval. They are still its delays at that rate.`;
}

/** The outbox section: relay throughput to JetStream against a raw publish loop, and commit-to-ack latency. */
export const outboxSection = {
  name: 'outbox',
  title: 'Outbox relay to NATS JetStream',
  baseline: 'raw',
  subject: 'rastro',
  rival: RIVAL,
  available: natsReachable,
  contenders: [contender('raw'), contender('rastro'), contender(RIVAL)],
  rows: [
    { key: 'relay1', name: '(a) relay throughput, 1 relay', unit: 'messages/s', baseline: rawPublish, minRatio: 0.7 },
    { key: 'relay3', name: '(b) relay throughput, 3 relays', unit: 'messages/s', baseline: rawPublish, minRatio: 0.7 },
    { key: 'p50', name: '(c) commit to PubAck, p50, at 1,000 messages/s', unit: 'ms', baseline: { label: 'target', value: 10 }, maxRatio: 1, target: '< 10 ms', lowerIsBetter: true },
    { key: 'p99', name: '(d) commit to PubAck, p99, at 1,000 messages/s', unit: 'ms', baseline: { label: 'target', value: 50 }, maxRatio: 1, target: '< 50 ms', lowerIsBetter: true },
  ],
  targets: `
Targets: (a) and (b) ≥ 0.7× the raw publish loop; (c) p50 < 10 ms; (d) p99 < 50 ms; ahead of
pg-transactional-outbox on every row (more messages/s in (a) and (b), fewer ms in (c) and (d)).
`,
  notes: (medians) => `
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
- **pg-transactional-outbox** 0.5.7: its polling listener (\`initializePollingMessageListener\`) on a
  schema of its own per run, made with its \`DatabaseSetup\` SQL (outbox table, \`next_outbox_messages\`
  function, indexes) and dropped afterwards. The outbox is filled by SQL in one transaction, one
  \`segment\` per aggregate (its per-aggregate order: the polling function hands out only the oldest
  unprocessed message of each segment), and the clock runs from the commit until every message is
  acknowledged. Its handler publishes with \`@nats-io/jetstream\` as the raw loop does, \`msgID\` the
  message id, the PubAck awaited, inside the library's transaction that locks the message row and
  marks it processed: each message in flight holds a pooled connection. Settings, chosen by
  measuring (a): 64 messages in flight (\`nextMessagesBatchSize\`) on 32 handler connections, a 10 ms
  polling interval, a 1 s message lock (\`nextMessagesLockInMs\`), no attempt limit (the default
  retry strategy ignores \`enableMaxAttemptsProtection: false\` and gives a message up after 5
  attempts, so the bench passes one that always retries), the full batch from the first poll. 256 in
  flight, as the others have, would need 256 connections: on 16 it relayed about half as fast as 64
  on 32 (128 on 32 a little slower), the extra messages waiting for a connection and losing the race
  for their row lock. That race costs retries at any setting: the polling function locks every aggregate's oldest
  message with \`FOR NO KEY UPDATE NOWAIT\` while it runs, a handler starting meanwhile fails its own
  NOWAIT lock, and the message waits for its lock to expire; the contender prints how many were
  retried. (b) runs three listeners (the library's way to scale: several instances polling one
  table) in one process, each with 22 in flight on 11 connections and a NATS connection of its own.
  (c), (d): one writer, one message per transaction through its \`initializeMessageStorage\`, the same
  listener settings.${medians?.[RIVAL] ? ` ${rivalLatencyNote(medians)}` : ''}
`,
};
