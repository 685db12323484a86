import { WORKLOAD } from './workload.js';

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const { connections, warmupMs, durationMs, balanceEvents, sequential, tail } = WORKLOAD;
const TARGET_MS = 5;
/** The targets for the request path against the raw server, in the same run. */
const DEPOSITS = 0.6;
const DEPOSIT_P99 = 2;
const KEYED = 0.5;
const BALANCES = 0.85;
const events = tail.events.toLocaleString('en-US');
/** Which slowest sample a nearest-rank p99 of `n` samples is: 1 for the maximum. */
const p99Rank = (n) => n - Math.ceil((99 / 100) * n) + 1;
const ordinal = (k) => (k === 1 ? 'slowest' : `${k}${{ 2: 'nd', 3: 'rd' }[k] ?? 'th'} slowest`);
const ms = (value) => (value === undefined ? '?' : value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1));

/** Why the snapshot row misses, as EXPLAIN showed it; printed only while it does. */
const missReading = (rastro) => `
**Why the snapshot row misses the target.** After \`ANALYZE\` the balance read's p50 rises from
${ms(rastro.tailP50SnapshotsFresh)} ms to ${ms(rastro.tailP50Snapshots)} ms although it returns one row. \`EXPLAIN ANALYZE\` of the tail query
(\`snapshotSql().tail\` in src/store/snapshots.ts) shows why: its events branch filters on
\`stream_version > coalesce((select version from snap), 0)\`, a bound the planner cannot know, so
it assumes a third of the stream's rows match. With statistics saying the table holds one stream,
that is about 33,000 rows, and it chooses a sequential scan of all ${events} events (about 8 ms)
over the primary-key range scan that finds none (0.1 ms). Before the first ANALYZE it has no
statistics and picks the index. Adding an upper bound to the same column
(\`and stream_version <= 9007199254740991\`) makes the two conditions a range whose selectivity
the planner defaults to 0.5 %, and it keeps the index scan after ANALYZE.
`;

/** The HTTP API section: rastro's `startServer` against a bare node:http + pg server. */
export const httpApiSection = {
  name: 'http-api',
  title: 'HTTP API',
  baseline: 'raw',
  subject: 'rastro',
  contenders: [contender('raw'), contender('rastro')],
  rows: [
    { key: 'deposits', name: `deposits, ${connections} connections`, unit: 'deposits/s', minRatio: DEPOSITS, target: `≥ ${DEPOSITS}× raw` },
    { key: 'depositP50', name: `deposit latency p50, ${connections} connections`, unit: 'ms' },
    { key: 'depositP99', name: `deposit latency p99, ${connections} connections`, unit: 'ms', maxRatio: DEPOSIT_P99, target: `≤ ${DEPOSIT_P99}× raw` },
    {
      key: 'keyedDeposits', name: `deposits with an Idempotency-Key, ${connections} connections`, unit: 'deposits/s',
      minRatio: KEYED, target: `≥ ${KEYED}× raw`,
    },
    { key: 'keyedP99', name: `keyed deposit latency p99, ${connections} connections`, unit: 'ms' },
    {
      key: 'balances', name: `balance reads, ${connections} connections, ${balanceEvents}-event accounts`, unit: 'reads/s',
      minRatio: BALANCES, target: `≥ ${BALANCES}× raw`,
    },
    { key: 'balanceP50', name: `balance latency p50, ${connections} connections`, unit: 'ms' },
    { key: 'balanceP99', name: `balance latency p99, ${connections} connections`, unit: 'ms' },
    {
      key: 'coldBalances', name: `balance reads, ${connections} connections, ${balanceEvents}-event accounts, nothing remembered`, unit: 'reads/s',
      baseline: { label: 'raw', contender: 'raw', key: 'balances' },
    },
    { key: 'sequentialP99', name: `balance latency p99, sequential, 1 account of ${balanceEvents} events`, unit: 'ms' },
    {
      key: 'tailP99Snapshots',
      name: `balance latency p99, sequential, 1 account of ${events} events, snapshot`,
      unit: 'ms',
      baseline: { label: 'target', value: TARGET_MS },
      maxRatio: 1,
      target: `< ${TARGET_MS} ms`,
    },
    {
      key: 'tailP99SnapshotsFresh',
      name: `balance latency p99, sequential, 1 account of ${events} events, snapshot, before ANALYZE`,
      unit: 'ms',
      baseline: { label: 'target', value: TARGET_MS },
      maxRatio: 1,
      target: `< ${TARGET_MS} ms`,
    },
    {
      key: 'tailP99Replay',
      name: `balance latency p99, sequential, 1 account of ${events} events, no snapshots`,
      unit: 'ms',
      baseline: { label: 'rastro, snapshot', key: 'tailP99Snapshots' },
    },
  ],
  targets: `
Targets, against the raw server in the same run: deposits ≥ ${DEPOSITS}× its rate with a p99 ≤ ${DEPOSIT_P99}× its
p99; deposits with an \`Idempotency-Key\` on every request ≥ ${KEYED}× its rate; balance reads ≥ ${BALANCES}×.
With snapshots (\`snapshotEvery: 100\`), the balance of an account of ${events} events read
from its snapshot answers with a p99 under ${TARGET_MS} ms, in the steady state (after PostgreSQL has
analyzed the table, as autovacuum does within about a minute). The other rows have no target.
`,
  notes: (medians) => {
    const { raw, rastro } = medians;
    return `
Each contender's process is the load generator; it forks the server under test into a process of
its own, so server and load do not share an event loop (they do share the machine's 2 cores with
PostgreSQL). Runs are interleaved (raw, rastro, raw, ...) and each cell is the median of the runs'
values. The load generator is \`node:http\` with a keep-alive \`http.Agent\` of ${connections}
sockets; each of ${connections} loops sends one request at a time. Every response's status is
checked (201 for deposits, 200 for balances) and a balance body is checked against the expected
balance and version before each sequential row.

- **rastro**: \`startServer({ port: 0, host: '127.0.0.1', databaseUrl, schema: 'bench_http_<random>',
  logLevel: 'silent', snapshotEvery })\` from \`dist/\` as \`rastro serve\` runs it (Fastify, JSON-schema
  validation, RFC 9457 errors, a \`pg\` pool of 10, the outbox relay and the order normalizer
  running beside it), in a fresh schema dropped afterwards. The server remembers the accounts it
  used (docs/accounts-api.md, "Remembered accounts"): a deposit is **one statement**, the append at
  the remembered version as \`expectedVersion\` (every 100 events a snapshot too); with an
  \`Idempotency-Key\` the same statement also stores the key and its response; a balance is one
  query for the events after the remembered version (none). Round trips per route: see "Round
  trips per request".
- **raw**: a bare \`node:http\` server with a \`pg\` pool of 10 (bench/http-api/raw-server.js) on a
  table shaped like rastro's \`events\` table (same columns, keys and index; no streams table,
  triggers or snapshots), same routes, bodies and status codes. A deposit is **one autocommit
  \`INSERT\`** of the event row, its stream version counted in the server's memory: no read
  before the write, no concurrency check. A balance is **one query**, \`select max(stream_version),
  sum((data->>'amount')::bigint) … where stream_id = $1\`, summing the account's rows in SQL.
  It ignores \`Idempotency-Key\`: its keyed row is the same insert. The ratios therefore price the
  framework and event sourcing (conditional append, key and response stored) together, not the
  framework alone.

Rows:

1. **deposits**: ${connections} accounts opened through \`POST /accounts\`; each connection deposits
   \`{ "amount": 1 }\` into its own account: ${warmupMs / 1000} s warm-up, then ${durationMs / 1000} s measured
   (requests in flight at the deadline finish and count). Latency is per request, at the client.
   **With an Idempotency-Key**: then the same, each request with a new key (a random UUID).
2. **balance reads**: ${connections} more accounts, each given ${balanceEvents - 1} deposits (${balanceEvents} events, below the snapshot
   interval); each connection reads its own account's \`GET /accounts/{id}/balance\`: ${warmupMs / 1000} s warm-up,
   ${durationMs / 1000} s measured. rastro remembers the accounts (its deposits filled them), so a read finds no event
   after the remembered version. **Nothing remembered**: the same accounts and reads on another
   server with \`accountCacheSize: 0\` (\`RASTRO_ACCOUNT_CACHE_SIZE=0\`), its tables analyzed after the fill,
   where every read folds the ${balanceEvents} events from the stream's start (no snapshot below version 100):
   what a read costs on a process that has not seen the account, such as another server behind the
   same load balancer.
3. **sequential, ${balanceEvents} events**: one connection, one request at a time: ${sequential.warmup} warm-up reads, then
   ${sequential.requests} measured, of one of those accounts; the raw server's p99 is this machine's floor for a
   sequential request. p50: raw ${ms(raw.sequentialP50)} ms, rastro ${ms(rastro.sequentialP50)} ms.
4. **${events} events**: rastro only, on servers that remember no account (\`accountCacheSize: 0\`), so
   that these rows measure the read from the snapshot, or of every event. A server child opens one account through the ledger
   and appends ${(tail.events - 1).toLocaleString('en-US')} \`AccountDeposited\` events through the store in batches of 1,000
   before the load starts; sequential reads as in row 3. **Snapshot**: \`snapshotEvery: 100\`,
   then \`ledger.rebuildSnapshots()\` writes one snapshot at version ${events}, so a read
   loads the snapshot and no events; ${tail.snapshots.warmup} warm-up, ${tail.snapshots.requests} measured (p99 is the
   ${ordinal(p99Rank(tail.snapshots.requests))}). They are measured twice: right after the fill, when
   the new table has no planner statistics yet, and after \`ANALYZE\`, the state autovacuum brings
   it to within about a minute; the target applies to the latter. p50: ${ms(rastro.tailP50Snapshots)} ms
   after ANALYZE, ${ms(rastro.tailP50SnapshotsFresh)} ms before. **No snapshots**: another server with
   \`snapshotEvery: 0\` and a freshly filled account, after \`ANALYZE\`; every read replays all
   ${events} events. Each read takes most of a second, so ${tail.replay.warmup} warm-up and ${tail.replay.requests} measured reads: its p99
   is the ${ordinal(p99Rank(tail.replay.requests))} of them. p50: ${ms(rastro.tailP50Replay)} ms.
${rastro.tailP99Snapshots >= TARGET_MS ? missReading(rastro) : ''}
For the ${connections}-connection rows the load generator, the server and PostgreSQL compete for the
same 2 cores, so the absolute numbers are lower than on a machine where they run apart.
Sequential p99s on this VM are noisy (row 3 shows the floor even the raw server has): single runs of
the ${events}-event rows differ by one to several milliseconds. bench/run.js prints
every run's values. \`BENCH_RUNS\`, \`BENCH_HTTP_DURATION_MS\`, \`BENCH_HTTP_WARMUP_MS\`,
\`BENCH_SEQUENTIAL_REQUESTS\` and \`BENCH_REPLAY_REQUESTS\` override the defaults (3 runs,
${durationMs / 1000} s, ${warmupMs / 1000} s, ${tail.snapshots.requests}, ${tail.replay.requests}); \`BENCH_SERVER_CPU_PROF=<dir>\` writes a CPU
profile of every server child.
`;
  },
};
