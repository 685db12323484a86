import { GROWTH, readAccounts } from './workload.js';

const count = (n) => n.toLocaleString('en-US');
const ms = (value) => (value === undefined ? '?' : value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1));
/** A row of the grown log may be this much worse than the base log's. */
const FLAT = 1.3;
const { events, base, clients, reads, probes, appendMs, turns } = GROWTH;
const baseLog = (key) => ({ label: `${count(base)} events`, contender: 'rastro', key: `base${key}` });
const grown = `log of ${count(events)} events`;

/**
 * The growth section: the same work against a log of BENCH_GROWTH_EVENTS events and one of
 * BENCH_GROWTH_BASE, built and measured in one process, in alternating turns.
 */
export const growthSection = {
  name: 'growth',
  title: 'Growth: the same work on a long log',
  baseline: 'rastro',
  subject: 'rastro',
  contenders: [{ name: 'rastro', script: new URL('./rastro.js', import.meta.url) }],
  // Building the grown log takes minutes: one run unless BENCH_RUNS says otherwise.
  runs: 1,
  rows: [
    { key: 'grownAppends8', name: `single-event append, ${clients} clients, ${grown}`, unit: 'appends/s', baseline: baseLog('Appends8'), minRatio: 1 / FLAT, target: `≥ ${(1 / FLAT).toFixed(2)}× base` },
    { key: 'grownReadStreamP99', name: `readStream of a 50-event stream, p99, ${grown}`, unit: 'ms', baseline: baseLog('ReadStreamP99'), maxRatio: FLAT, target: `≤ ${FLAT}× base` },
    { key: 'grownBalanceP99', name: `account balance, 50 events, p99, ${grown}`, unit: 'ms', baseline: baseLog('BalanceP99'), maxRatio: FLAT, target: `≤ ${FLAT}× base` },
    { key: 'grownHandledP99', name: `live runner, commit to handled, p99, ${grown}`, unit: 'ms', baseline: baseLog('HandledP99'), maxRatio: FLAT, target: `≤ ${FLAT}× base` },
    { key: 'grownReadStreamP50', name: 'readStream of a 50-event stream, p50', unit: 'ms', baseline: baseLog('ReadStreamP50') },
    { key: 'grownBalanceP50', name: 'account balance, p50', unit: 'ms', baseline: baseLog('BalanceP50') },
    { key: 'grownHandledP50', name: 'live runner, commit to handled, p50', unit: 'ms', baseline: baseLog('HandledP50') },
  ],
  targets: `
Target: every row of a log of ${count(events)} events within ${FLAT}× its value on a log of
${count(base)} events (throughput at least 1/${FLAT} of it, latency at most ${FLAT}×). The p50 rows have no target.
`,
  notes: (medians) => {
    const { rastro } = medians;
    return `
Run alone: \`npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node bench/run.js growth\`
(about three minutes here). \`BENCH_GROWTH_EVENTS\` and \`BENCH_GROWTH_BASE\` set the two logs' sizes
(${count(events)} and ${count(base)}, whole accounts of 50 events); \`BENCH_GROWTH_READS\`, \`BENCH_GROWTH_PROBES\` and
\`BENCH_GROWTH_APPEND_MS\` the samples (${count(reads.measured)}, ${count(probes.measured)}, ${appendMs / 1000} s).

One process, with a \`pg\` pool of 10, builds both logs, each in a fresh schema dropped afterwards
(bench/growth/build-log.js): account streams of 50 events (\`AccountOpened\`, then 49
\`AccountDeposited\` of 1), inserted by the server from \`generate_series\` in transactions of a
million events, each with its own \`tx_order\` (its transaction id, as an append's) and the
\`streams\` rows of its accounts; the events table's primary key, unique \`id\` and
\`(tx_order, position)\` index are dropped for the load and built again after it under their own
names, and the tables are vacuumed and analyzed, the state autovacuum keeps a table in that grew
over time. Both logs are read through the same number of accounts, so that the rows compare the
cost of the log's size (index depth, plans), not of a larger working set: read cold, 20,000 random
accounts of the grown log (about 250 MB of heap and index, past PostgreSQL's default 128 MB of
\`shared_buffers\`) had p99s 1.6 to 1.7× those of the base log's 1,200 warm ones, whichever read
came first, while their p50s stayed within 1.1×. A log larger than memory wants
\`shared_buffers\` (and the OS page cache) sized for its hot streams, not for the log. The grown log took ${ms(rastro.grownBuildSeconds)} s to build here, the base log ${ms(rastro.baseBuildSeconds)} s. Then each
measurement runs against both logs in ${turns} alternating turns (base, grown, grown, base, ...), so that
what else runs on the machine weighs on both alike:

1. **appends**: ${clients} loops on the store (\`store.append\` of one \`AccountDeposited\`, exact expected
   version), each to 100 accounts of its own of the log, round robin: 1 s warm-up per log, then a
   round of ${appendMs / 1000} s per log and turn, the median round counted.
2. **readStream**: \`store.readStream('account-<id>')\` of a random account among ${count(readAccounts())} of the log
   (50 events, checked; as many in both logs, all the base log has besides the appends'), one at
   a time: each account read once to warm up, then ${count(reads.measured)} reads measured per log.
3. **balance**: \`ledger.get(id)\` on an account ledger that remembers nothing (\`cacheSize: 0\`, so
   each read is the snapshot and the events after it, one query), random accounts as in 2, the
   balance checked.
4. **live runner**: a \`runLive\` per log, of a processor of \`GrowthProbe\` events, a type neither log
   holds. Probes are appended one at a time, alternating the logs, 10 to 30 ms apart; the time
   from a probe's append resolving to its handler running: ${probes.warmup} warm-up, ${count(probes.measured)} measured per log.
   A runner's first read after its start goes through the whole log once: its first probe was
   handled ${ms(rastro.grownFirstHandledMs)} ms after the start on the grown log, ${ms(rastro.baseFirstHandledMs)} ms on the base log. Every
   later read starts where the last read that found nothing ended
   (src/processing/runners/scanned-below.ts); before that, each read went through every event
   appended since the runner's last handled one, and this row grew with the log.
`;
  },
};
