import { AUDIT, sizeKey } from './workload.js';

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const count = (n) => n.toLocaleString('en-US');
const largest = AUDIT.sizes.at(-1);
const [smallest] = AUDIT.sizes;
const unit = largest / 100_000;

/** The audit section: a full audit against a raw scan of the same tables, and incremental audits flat in the history. */
export const auditSection = {
  name: 'audit',
  title: 'rastro audit',
  baseline: 'raw',
  // Each run seeds a deployment of a million events per contender; the rounds inside a run give the median.
  runs: 1,
  subject: 'rastro',
  contenders: [contender('raw'), contender('rastro')],
  rows: [
    {
      key: 'full', name: `full audit of ${count(largest)} events, ${count(10_000 * unit)} charges, ${count(10_000 * unit)} orders`, unit: 'rows/s',
      minRatio: 0.3, target: '≥ 0.3× raw',
    },
    ...AUDIT.sizes.map((size) => ({
      key: `incremental${sizeKey(size)}`, name: `incremental audit after ${count(AUDIT.newEvents)} new events over ${count(size)}`, unit: 'ms',
      baseline: { label: `rastro full audit of ${count(largest)}`, contender: 'rastro', key: 'fullMs' },
    })),
    {
      key: `incremental${sizeKey(largest)}`, name: `flat: incremental over ${count(largest)} vs over ${count(smallest)}`, unit: 'ms',
      baseline: { label: `rastro over ${count(smallest)}`, contender: 'rastro', key: `incremental${sizeKey(smallest)}` }, maxRatio: 1.3, target: '≤ 1.3×',
    },
  ],
  targets: `
Targets: a full audit at or above 0.3× the rows per second of a raw scan of the same tables; an incremental audit after ${count(AUDIT.newEvents)} new events within 1.3× of itself from ${count(smallest)} to ${count(largest)} events of history.
`,
  notes: `
Run alone: \`npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node bench/run.js audit\` (about two
minutes here, most of it seeding). The figures above were taken with that command against a
cluster on port 5445, on a 2-core machine shared with other work (load average about 15): the
ratios, measured in the same run, are what counts.

Each contender seeds its own bench schema by set-based SQL (setup, not measured): per 100,000 events,
10,000 orders of five snapshots (\`order:pied:<id>\`) with their normalized rows exactly as the
normalizer folds them and the live checkpoint past them; 5,000 accounts of ten events with a
snapshot at version 10; 10,000 CAPTURED charges, each with its ledger entry, \`ChargeStarted\` and
\`ChargeCaptured\`, published by a relay run. Every audit is checked clean: a finding fails the run.

- **raw**: every column of every row of the tables the audit reads (events, streams, projections,
  snapshots, charges, effects, outbox, checkpoints) fetched in keyset pages of 10,000 through the
  same driver, after one warm-up scan. Rows per second over all of them.
- **rastro**: \`runAudit(store, { full: true })\` over the same deployment, after a first, recorded one
  (its warm-up); rows per second over the same row count. It groups every stream's versions in
  SQL, folds every order and account snapshot with the normalizer's and the ledger's own folds in
  Node, and checks every charge's trail against the outbox.
- **incremental**: per history, three rounds of ${count(AUDIT.newEvents)} new events (1,000 new orders, 500 new
  accounts, with their rows and snapshots, in one transaction), each followed by \`runAudit(store)\`;
  the median. It examines the new streams on the \`(tx_order, position)\` index, and the rows of
  mutable tables written since the last audit by their \`xmin\`, which costs one pass over each of
  those tables' tuple headers.
`,
};
