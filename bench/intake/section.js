import { INTAKE, sizeKey } from './workload.js';

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const count = (n) => n.toLocaleString('en-US');
const [smallest] = INTAKE.sizes;

/** The intake section: normalizer round time against the seed's full-history round, and webhook intake. */
export const intakeSection = {
  name: 'intake',
  title: 'Snapshot intake and the order normalizer',
  baseline: 'seed',
  // Each run loads 1.1 million snapshots per contender; the rounds inside a run give the median.
  runs: 1,
  subject: 'rastro',
  contenders: [contender('seed'), contender('rastro')],
  rows: [
    ...INTAKE.sizes.map((size) => ({
      key: sizeKey(size), name: `round: ${count(INTAKE.newSnapshots)} new snapshots over ${count(size)}`, unit: 'ms',
    })),
    {
      key: sizeKey(INTAKE.sizes.at(-1)), name: `flat: round over ${count(INTAKE.sizes.at(-1))} vs over ${count(smallest)}`, unit: 'ms',
      baseline: { label: `rastro over ${count(smallest)}`, contender: 'rastro', key: sizeKey(smallest) }, maxRatio: 1.3, target: '≤ 1.3×',
    },
    { key: 'webhooks', name: `intake over ${INTAKE.connections} connections`, unit: 'webhooks/s', baseline: { label: 'target', value: 2_000 }, minRatio: 1, target: '≥ 2,000 webhooks/s' },
  ],
  targets: `
Targets: a round flat in the history, at most 1.3× from ${count(smallest)} to ${count(INTAKE.sizes.at(-1))} snapshots; intake ≥ 2,000 webhooks/s over 16 connections.
`,
  notes: `
Run alone: \`npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node bench/run.js intake\` (about a
minute here: most of it loads the histories).

Histories of ${INTAKE.sizes.map(count).join(', ')} raw snapshots, ten per order (\`order:pied:<id>\` streams),
inserted by SQL straight into a fresh bench schema's events table with the normalized order rows
and the live checkpoint at their end (setup, not measured); then ${count(INTAKE.newSnapshots)} new webhook snapshots of as
many orders, stored through the intake (setup, not measured).

- **seed**: the seed's full-history round on the same data: every snapshot re-read in capture
  order (keyset pages of 5,000), folded per order with the same fold and recency rule, and every
  order upserted again (1,000 per statement), as \`normalizarCronologico()\` did each 5 minutes.
- **rastro**: \`orders.normalizeRound()\`: a live runner of the \`orders\` processor started, run until
  nothing committed is past its checkpoints, and stopped; median of ${INTAKE.rounds} rounds of ${count(INTAKE.newSnapshots)} new
  snapshots each, after one warm-up round (not measured) per history. Each event's handler reads its order's earlier events (ten here), so a round
  costs in the new snapshots and their orders' histories, not in the log.
- **intake**: \`POST /intake/pied/orders\` into \`startServer\` in a process of its own, 16 keep-alive
  connections each sending one distinct webhook at a time, for ${INTAKE.webhookDurationMs / 1000} s after a ${INTAKE.webhookWarmupMs / 1000} s warm-up; every
  one is checked stored.

Reading: at 10,000 snapshots there are only 1,000 orders, and every one of them gets a new
snapshot, so the seed's full round upserts the same 1,000 rows a round writes, with no live
runner to start and no per-event read of the order's history: it is cheaper there. From 100,000
on, its cost follows the log (about 10 s a round at 1,000,000) while a round stays where it was.
The webhook row moved between 3,500 and 4,200 webhooks/s from run to run here.
`,
};
