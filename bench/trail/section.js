const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const EVENTS = Number(process.env.BENCH_TRAIL_EVENTS ?? 1_000_000);
const count = (n) => n.toLocaleString('en-US');
/** The share of the log the incremental verification has to examine. */
const SHARE = 10_000 / (EVENTS + 10_000);

/** The trail: sealing against the append rate, a full verification against a raw scan, an incremental one against the full. */
export const trailSection = {
  name: 'trail',
  title: 'The trail',
  baseline: 'rastro',
  // Each run builds a log of a million events; one run, its rows measured within it.
  runs: 1,
  subject: 'rastro',
  contenders: [contender('rastro')],
  rows: [
    { key: 'sealRate', name: 'sealing, against 8 clients appending single events', unit: 'events/s', baseline: { label: '8-client appends', contender: 'rastro', key: 'append8' }, minRatio: 1.5, target: '≥ 1.5× (room to spare)' },
    { key: 'verifyRate', name: `full verification of ${count(EVENTS)} events`, unit: 'events/s', baseline: { label: 'raw scan of the table', contender: 'rastro', key: 'rawScanRate' }, minRatio: 0.3, target: '≥ 0.3× raw scan' },
    {
      key: 'incrementalMs', name: `incremental verification after ${count(10_000)} new events`, unit: 'ms', baseline: { label: 'full verification', contender: 'rastro', key: 'fullMs' },
      maxRatio: SHARE * 3, target: `< ${(SHARE * 3).toFixed(2)}× full (3× the share of new events)`,
    },
  ],
  targets: `
Targets: the sealer keeps up with 8 clients' appends with room to spare (the ratio is stated); a
full verification of ${count(EVENTS)} events at ≥ 0.3× a raw scan of the same table; an
incremental verification after ${count(10_000)} new events costs in proportion to what changed
(under three times the share of the log that is new).
`,
  notes: `
One process, one fresh schema (\`bench_trail_N\`), a pool of 10:

1. **8-client appends**: for ${Number(process.env.BENCH_DURATION_MS ?? 5000) / 1000} s, 8 clients each append one event at a time to a stream of its own,
   with its exact expected version (links computed in the append's statement).
2. **the log**: ${count(EVENTS)} events, 50 per stream in one append each, on 8 connections.
3. **sealing**: a sealer (\`startSealer\`, blocks of 10,000, every 10 ms) seals the whole log;
   events per second from its start to the last block.
4. **raw scan**: every column of every row of the events table by keyset pages of 10,000 on
   \`(tx_order, position)\`, after a warm-up scan.
5. **full verification**: \`verifyTrail(store, { full: true })\`: every link recomputed in SQL from
   its content and its predecessor's (one pass over the stream order), every stream row's head,
   every block's Merkle root recomputed in Node from the links of its range; no finding allowed.
6. **incremental verification**: ${count(10_000)} more events (sealed), then \`verifyTrail\` from the full
   verification's checkpoint: the new events' links, the stream rows written since, the new
   blocks, and the statistics' count of deletes and updates.

\`BENCH_TRAIL_EVENTS\` sets the log's size.
`,
};
