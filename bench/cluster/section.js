import { privatePostgresMissing } from './postgres.js';
import { NATS_SERVER } from './servers.js';
import { CLUSTER } from './workload.js';

const fixed = (value, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

/** The cost of replication in words, from this run's medians. */
function costOfReplication(medians) {
  const rastro = medians?.rastro;
  const raw = medians?.raw;
  if (!rastro || !raw) return '';
  return `**The cost of replication, this run.** R3 on three nodes against R1 on one server, same-run ratios:
the relay's throughput ${fixed(rastro.thrCost)}× (raw JetStream ${fixed(raw.thrCost)}×), its commit-to-PubAck p99 ${fixed(rastro.p99Cost)}×
(raw ${fixed(raw.p99Cost)}×); p50 ${fixed(rastro.p50R3, 1)} ms on R3 against ${fixed(rastro.p50R1, 1)} ms on R1. A ratio near 1 means the cost
was within this machine's noise; the p99 rows mostly measure the machine's other work.`;
}

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const raw = (label, key) => ({ label: `raw ${label}`, contender: 'raw', key });

/** The cluster section: the relay to an R3 stream on a three-node cluster and to R1 on one server, each beside raw JetStream on the same servers. */
export const clusterSection = {
  name: 'cluster',
  title: 'Outbox relay to a three-node NATS cluster (R3) and to one server (R1)',
  baseline: 'raw',
  subject: 'rastro',
  // Three servers and a relay on 2 shared cores: more runs than the default, and ratios over absolutes.
  runs: 5,
  available: async () => (NATS_SERVER ? privatePostgresMissing() : 'nats-server is not installed (/usr/sbin, /usr/bin, /usr/local/bin)'),
  contenders: [contender('raw'), contender('rastro')],
  rows: [
    { key: 'thrR3', name: '(a) relay throughput, R3 stream, 3 nodes', unit: 'messages/s', baseline: raw('R3 publish', 'thrR3'), minRatio: 0.5 },
    { key: 'thrR1', name: '(b) relay throughput, R1 stream, 1 server', unit: 'messages/s', baseline: raw('R1 publish', 'thrR1'), minRatio: 0.5 },
    { key: 'thrCost', name: '(c) R3 ÷ R1 throughput, same run', unit: '×', baseline: raw('R3 ÷ R1', 'thrCost') },
    { key: 'p50R3', name: `(d) commit to PubAck p50, R3, ${CLUSTER.rate}/s`, unit: 'ms', baseline: raw('R3 p50', 'p50R3') },
    { key: 'p99R3', name: `(e) commit to PubAck p99, R3, ${CLUSTER.rate}/s`, unit: 'ms', baseline: raw('R3 p99', 'p99R3') },
    { key: 'p50R1', name: `(f) commit to PubAck p50, R1, ${CLUSTER.rate}/s`, unit: 'ms', baseline: raw('R1 p50', 'p50R1') },
    { key: 'p99R1', name: `(g) commit to PubAck p99, R1, ${CLUSTER.rate}/s`, unit: 'ms', baseline: raw('R1 p99', 'p99R1') },
    { key: 'p99Cost', name: '(h) R3 ÷ R1 p99, same run', unit: '×', baseline: raw('R3 ÷ R1', 'p99Cost') },
  ],
  targets: `
Targets: (a) and (b) ≥ 0.5× raw JetStream on the same servers. The other rows have no target:
they measure what replication costs. Read the ratios, not the absolute numbers: this machine has 2
cores shared with other work, and three NATS servers, PostgreSQL and the relay share them here.
`,
  notes: (medians) => `
${costOfReplication(medians)}

Each contender run starts its own servers on free loopback ports and temporary folders, and stops
them after: one NATS server with JetStream (R1), then a three-node cluster (R3, every replica
current before the clock starts). (c) and (h) are ratios taken within one run of one contender
(R3 and R1 measured back to back in the same process), then the median of the runs: the noise of
the shared machine moves both sides of each ratio together. A contender that cannot start its
servers or loses messages fails its run, naming itself and why, and the section stops there.

- **raw**: the official client (\`@nats-io/jetstream\`) publishing ${CLUSTER.messages.toLocaleString('en-US')} messages of about 200 bytes
  with ${CLUSTER.inFlight} publishes in flight, \`msgID\` set, every PubAck awaited; then one publish at a time
  at ${CLUSTER.rate}/s for ${CLUSTER.latencySeconds} s, the delay from handing it to the client to the PubAck.
- **rastro**: \`runRelay\` with \`createNatsPublisher({ replicas })\` (what \`RASTRO_NATS_REPLICAS\` sets), which
  creates the stream; on a private PostgreSQL server started for the run (default settings), since
  the machine's shared server carries other work whose open transactions hold every reader's
  frontier back and would be measured instead. Throughput: the outbox filled by SQL in one
  transaction (${CLUSTER.aggregates} aggregates), the clock from its commit until every message is acknowledged.
  Latency: one message per transaction through \`outbox.write\` at ${CLUSTER.rate}/s for ${CLUSTER.latencySeconds} s, from the
  writer seeing its commit to the relay receiving the PubAck.
`,
};
