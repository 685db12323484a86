import { PROCESSING } from './workload.js';

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const rawScan = { label: 'raw scan', contender: 'raw', key: 'scan' };

/** The processing section: replay throughput against a raw scan of the same events. */
export const processingSection = {
  name: 'processing',
  title: 'Processors and replays',
  baseline: 'raw',
  subject: 'rastro',
  contenders: [contender('raw'), contender('rastro')],
  rows: [
    { key: 'replayRecorded', name: '(a) replay, every effect already recorded', unit: 'events/s', baseline: rawScan, minRatio: 0.25 },
    { key: 'replayApplied', name: '(b) replay, every effect applied (in-process provider)', unit: 'events/s', baseline: { label: 'target', value: 5_000 }, minRatio: 1, target: '≥ 5,000 events/s' },
    { key: 'simulate', name: '(c) simulate', unit: 'events/s', baseline: rawScan, minRatio: 0.25 },
  ],
  targets: `
Targets: (a) ≥ 0.25× the raw scan; (b) ≥ 5,000 events/s; (c) ≥ 0.25× the raw scan.
`,
  notes: `
${PROCESSING.events.toLocaleString('en-US')} \`order.paid\` events, one per order stream (version 1), inserted by SQL into a
fresh schema per contender and run (setup, not measured).

- **raw**: one \`pg\` pool reading the events table in \`(tx_order, position)\` order, ${PROCESSING.pageSize.toLocaleString('en-US')} per
  keyset page, computing the commission per row: what any consumer has to do at least.
- **rastro**: \`runReplay\` with batches of ${PROCESSING.batchSize}, a handler that writes the commission with
  \`ctx.upsert\` (version guard) and asks for one \`notify-seller\` effect, policy \`apply\`/\`keep\`.
  (b) runs first and applies all ${PROCESSING.events.toLocaleString('en-US')} effects against an in-process provider (a function
  that returns at once); (a) is a second run with another run id, which finds every effect already
  recorded and every commission row at the same version; (c) simulates, writing diffs only.

Reading the misses of (a) and (c): a replay of recorded effects does, per 1,000 events, one read
of the events, one lookup of their ledger entries (on a second connection, beside the handlers'
first round), one lookup of the projection rows they write, and one small commit (counters and
checkpoint); unchanged rows and settled effects are not written. The database part of that is
about half the time. A CPU profile of (a) shows the Node process busy for the rest: the \`pg\`
driver building rows and parsing two timestamps per event, garbage collection (about a fifth of
the run) and the per-event handler scheduling. A raw scan does none of the lookups and none of the
scheduling, which is why it stays 6× ahead. Next steps: read processing batches with only the
columns handlers use and parse timestamps lazily; spread a replay over the live runner's
partitions in several processes.
`,
};
