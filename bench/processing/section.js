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

- **one read**: a single statement returns the batch as one JSON value, built as text (the events
  in the order read, their ledger entries for the policy's applied effect types found by one range
  scan over the batch's positions, and the run's parked streams, in one snapshot; the events are
  scanned once), read while the previous batch runs, and decoded by one \`JSON.parse\`;
- **one probe** of the projection rows the handlers write, answered as one JSON value;
- **one statement** saving counters and checkpoints, while the next batch runs; unchanged rows and
  settled effects are not written.

Where the time goes (CPU of each PostgreSQL backend from \`/proc/<pid>/stat\` over the 100
batches of a run; V8's CPU and sampling heap profilers for the Node side), per 1,000 recorded
events:

- **PostgreSQL**, about 7 ms: the read 3.6 ms, the probe 2.9 ms (1.6 ms of it the 1,000
  primary-key lookups), saving progress 0.3 ms. The raw scan's statement costs about 1.5 ms.
  The read cost 6.5 ms before its JSON was built as text (json_build_array looks up each
  argument's type on every call) and before the ledger entries were found by position (an index
  descent per event id cost 3 ms of it). The check that a partition has nothing left hashed every
  event of the range (75 ms on these 100,000 events, twice per run); it now looks up each
  partition's next event (0.2 ms).
- **Node**, about 8 ms: a third collecting garbage (about 4.9 kB allocated per event, most of it
  the handler's promises and the requests it awaits), then decoding the batch's JSON and the
  probe's answer.
- **The wait**: the handlers wait on the probe, and nothing else runs for the batch meanwhile. Of
  the 12 to 17 ms a batch takes, the probe's answer takes 5 to 10: its statement runs beside the
  next batch's read, and its answer arrives while Node decodes that read. The probe joins the keys
  one by one (4.6 ms of PostgreSQL CPU per 1,000 keys, measured alone in a slower hour than the figures
  above, 100 probes of a 100,000-row projection). One \`key = any(…)\` per projection walks the
  primary key once in key order: 2.9 ms there, and 8% less probe wait within a replay. It was
  taken back: on a projection of a few thousand rows the planner puts the array in a join filter
  or a sequential scan, 20 to 500 ms a probe, where the join takes 2 to 4 ms on every size. With it,
  (b), whose projection grows from empty, measured 12,300 events/s, against 15,200 an hour before
  and 15,900 with the join again.

Measured back to back with the code before these changes (8ca76ee), alternating, 5 runs each
time, on 2026-12-02 while the machine ran slower than on a quiet day (the raw scan 206,000 to
223,000 events/s in all four medians): (a) 44,600 and 52,153 events/s before, 59,807 and 64,417
after; (c) 42,975 and 52,633 before, 61,129 and 75,881 after.

A replay thus uses about 15 ms of CPU per 1,000 events where the raw scan uses about 3. On these
2 cores it keeps about three quarters of both busy: even with both busy all the time, it would
reach about 0.35× a raw scan measured on a quiet machine. 0.4× needs about a quarter less CPU per
event at today's overlap. The raw scan moves much more with the machine's load than the replay
does: on a loaded machine the ratio reads higher. A larger young generation
(\`NODE_OPTIONS=--max-semi-space-size=64\`) nearly halves the garbage collector's time on long
replays.
`,
};
