import { PROCESSING } from './workload.js';

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const rawScan = { label: 'raw scan', contender: 'raw', key: 'scan' };

/** The processing section: replay throughput against a raw scan of the same events. */
export const processingSection = {
  name: 'processing',
  title: 'Processors and replays',
  baseline: 'raw',
  // The raw scan moves a lot from run to run on a small machine: five runs steady the medians.
  runs: 5,
  subject: 'rastro',
  contenders: [contender('raw'), contender('rastro')],
  rows: [
    { key: 'replayRecorded', name: '(a) replay, every effect already recorded', unit: 'events/s', baseline: rawScan, minRatio: 0.4 },
    { key: 'replayApplied', name: '(b) replay, every effect applied (in-process provider)', unit: 'events/s', baseline: { label: 'target', value: 5_000 }, minRatio: 1, target: '≥ 5,000 events/s' },
    { key: 'simulate', name: '(c) simulate', unit: 'events/s', baseline: rawScan, minRatio: 0.4 },
  ],
  targets: `
Targets: (a) ≥ 0.4× the raw scan of the same events in the same run; (b) ≥ 5,000 events/s; (c) ≥ 0.4× the raw scan.
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

Between (b) and (a) the effects and commission tables are vacuumed and analyzed (setup, not
measured): the ledger at rest, as a replay finds it a day after the live run. The events table is
vacuumed after it is filled, for both contenders.

What a replay of recorded effects does per 1,000 events, on each side of the wire:

- **one read**: a single statement returns the batch as one JSON value (the events, their ledger
  entries for the policy's applied effect types, and the run's parked streams, in one snapshot;
  the events are scanned once), read while the previous batch runs, and decoded by one
  \`JSON.parse\`;
- **one probe** of the projection rows the handlers write, answered as one JSON value;
- **one statement** saving counters and checkpoints, while the next batch runs; unchanged rows and
  settled effects are not written.

Where the time went before (CPU per 100,000 events from each process's \`/proc/<pid>/stat\`,
allocations from V8's sampling heap profiler): the Node side spent a quarter of its time
collecting garbage (about 7 kB allocated per event, an eighth of it for the spans of handlers no
tracing SDK records), and much of the rest decoding a row per event of three reads (events,
ledger, parked streams) and of the probe; PostgreSQL scanned each batch's events twice. Now a
handler runs without span objects when no tracing SDK is registered, each request a handler
awaits is one object, and PostgreSQL reads the events once: about 5 kB allocated per event, a
quarter less CPU on the Node side and about a tenth less on PostgreSQL's.

On a 2-core machine the Node process and PostgreSQL share the cores: a replay keeps both busy
(per 100,000 recorded events, about 0.7 s of CPU in Node and as much in PostgreSQL), the raw
scan mostly one. The figures above were measured on a quiet machine; measured while other work
shared the cores, the raw scan slows far more than the replay does, and the ratio reads about
0.33×. Where the Node side's time goes now: about a third collecting garbage (about 5 kB
allocated per event), a fifth writing to the socket while PostgreSQL takes the other core, and
the rest mostly decoding the batch's JSON (events, ledger entries, probed rows). A larger young
generation (\`NODE_OPTIONS=--max-semi-space-size=64\`) cuts the Node side by another quarter on
long replays.
`,
};
