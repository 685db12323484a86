import { WORKLOAD } from './workload.js';

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const { batch, read, single } = WORKLOAD;

/** The event-store section: which processes run, which rows they report, what rastro must reach. */
export const eventStoreSection = {
  name: 'event-store',
  title: 'Event store',
  baseline: 'raw',
  subject: 'rastro',
  rival: 'emmett',
  contenders: [contender('raw'), contender('rastro'), contender('unchained'), contender('emmett')],
  rows: [
    { key: 'singleAppend1', name: 'single-event append, 1 client', unit: 'appends/s', minRatio: 0.8 },
    { key: 'singleAppend8', name: 'single-event append, 8 clients', unit: 'appends/s', minRatio: 0.8 },
    { key: 'batchAppend', name: `${batch.size}-event batch append, 1 client`, unit: 'events/s', minRatio: 0.8 },
    { key: 'readAll', name: `read ${read.events.toLocaleString('en-US')} events in global order`, unit: 'events/s', minRatio: 0.6 },
    // What the trail's chain costs: the same appends, hashed and unhashed.
    { key: 'singleAppend1', name: 'the chain: single-event append, 1 client', unit: 'appends/s', baseline: { label: 'without the chain', contender: 'unchained', key: 'singleAppend1' }, minRatio: 0.9, target: '≥ 0.9× without' },
    { key: 'singleAppend8', name: 'the chain: single-event append, 8 clients', unit: 'appends/s', baseline: { label: 'without the chain', contender: 'unchained', key: 'singleAppend8' }, minRatio: 0.9, target: '≥ 0.9× without' },
    { key: 'batchAppend', name: `the chain: ${batch.size}-event batch append`, unit: 'events/s', baseline: { label: 'without the chain', contender: 'unchained', key: 'batchAppend' }, minRatio: 0.9, target: '≥ 0.9× without' },
  ],
  targets: `
Targets: single-event append ≥ 0.8× raw insert at the same concurrency; batch append ≥ 0.8× raw
multi-row insert; readAll ≥ 0.6× raw scan; ahead of Emmett on every row. The trail's chain (each
event's hash, computed in the append's statement) costs at most a tenth: appends with it ≥ 0.9×
the same appends without it.
`,
  notes: `
Each contender runs in its own Node process, in a fresh schema (\`bench_raw_N\`, \`bench_rastro_N\`)
or, for Emmett, which has no schema option, a fresh database (\`bench_emmett_N\`). Runs are
interleaved (raw, rastro, emmett, raw, ...) and each cell is the median of the runs. Every
contender uses a pool of 10 connections and the same events (about 150 bytes of JSON data).

- **raw**: \`pg\` against a table with the same columns, primary key, unique \`id\` and
  \`(tx_order, position)\` index as rastro's \`events\` table (no streams table, no triggers).
  Appends are one autocommit \`INSERT\` (multi-row for a batch) with the stream version computed by
  the client; reads page by keyset on \`(tx_order, position)\` with the same page size, int8 parsed
  to numbers and jsonb by \`JSON.parse\`, as rastro does.
- **rastro**: \`store.append\` with the known stream version as \`expectedVersion\` (0, which is
  \`'no-stream'\`, for a new stream); \`store.readAll({ after: lastEvent, limit })\`.
- **unchained**: rastro as above, in a schema whose \`event_chain\` and \`event_link\` (migrations
  0019 and 0021) are replaced by functions that link nothing: the same statements, the same rows,
  no hashing. The rows "the chain: …" compare rastro with it. A single event appended at a known
  version binds its columns as scalars and computes its one link; a batch to a new stream
  computes its links once, before the stream's row.
- **emmett**: \`@event-driven-io/emmett-postgresql\` 0.42 \`getPostgreSQLEventStore\` on a \`pg\` pool
  of 10 handed to dumbo (\`dumbo({ connectionString, pool })\`, what dumbo would create itself);
  \`appendToStream\` with \`expectedStreamVersion\` (0n for a new stream); reads with
  \`readMessagesBatch({ after, batchSize })\`, the global-order read its consumers use.

Rows, in the order they run against one store:

1. **${batch.size}-event batch append**: ${batch.warmupBatches} warm-up batches, then ${batch.batches.toLocaleString('en-US')} timed batches, each to a new stream, one client.
2. **read**: ${read.warmupEvents.toLocaleString('en-US')} warm-up events, then the first ${read.events.toLocaleString('en-US')} events of the log in global order, ${read.pageSize.toLocaleString('en-US')} per page, after \`ANALYZE\` of the contender's tables. Pages of 5,000 and 10,000 read no faster than 1,000.
   rastro delivers only events below the oldest transaction running in the whole cluster, so
   before the timed read the bench waits until no transaction holds its log back; an empty page
   during the read (another client's transaction on the same server) is waited out, that wait
   counts in the time, and bench/run.js prints it per run as \`readHeldBackMs\`.
3. **single-event append**: every client owns ${single.streamsPerClient} streams, created by a
   warm-up; then for ${single.durationMs / 1000} s each client appends one event at a time to one of
   its streams chosen at random, with that stream's exact expected version. The 8-client row runs 8
   such loops on 8 pooled connections.

The machine is a small VM whose fsync latency varies: single runs of the append rows differ by up
to a third, which is why runs are interleaved and the median is kept. bench/run.js prints every
run's values. \`BENCH_RUNS\`, \`BENCH_DURATION_MS\` and \`BENCH_PAGE_SIZE\` override the defaults
(3 runs, 5 s, 1,000).
`,
};
