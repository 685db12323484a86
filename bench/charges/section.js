import { CHARGES } from './workload.js';

const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });
const { connections, warmupMs, durationMs, stale, limit, staleMinutes } = CHARGES;
const count = (n) => n.toLocaleString('en-US');
const ms = (value) => (value === undefined ? '?' : value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(2));
/** A charge may cost at most this many idempotent deposits. */
const MAX_COST = 2;
const deposits = { label: 'idempotent deposits, same server', contender: 'rastro', key: 'deposits' };

/** The charges section: `POST /charges` beside the same server's idempotent deposit, and reconciliation. */
export const chargesSection = {
  name: 'charges',
  title: 'Charges and reconciliation',
  baseline: 'acquirer',
  subject: 'rastro',
  contenders: [contender('acquirer'), contender('rastro')],
  rows: [
    {
      key: 'charges', name: `charges, ${connections} connections (deposit time / charge time)`, unit: 'charges/s',
      baseline: deposits, minRatio: 1 / MAX_COST, target: `≥ ${1 / MAX_COST}×: a charge ≤ ${MAX_COST}× a deposit`,
    },
    { key: 'chargeP50', name: `charge latency p50, ${connections} connections`, unit: 'ms', baseline: { label: 'deposit p50', contender: 'rastro', key: 'depositP50' } },
    { key: 'chargeP99', name: `charge latency p99, ${connections} connections`, unit: 'ms', baseline: { label: 'deposit p99', contender: 'rastro', key: 'depositP99' } },
    { key: 'chargeCpuMs', name: 'server CPU per charge', unit: 'ms', baseline: { label: 'per deposit', contender: 'rastro', key: 'depositCpuMs' } },
    {
      key: 'charges', name: `charges, ${connections} connections, against the acquirer fake's ceiling`, unit: 'charges/s',
      baseline: { label: 'fake alone, captures/s', contender: 'acquirer', key: 'captures' }, maxRatio: 0.5, target: '< 0.5×: the fake is not the bottleneck',
    },
    {
      key: 'reconciled1', name: `reconcile ${count(stale)} stale PENDING charges, 1 reconciler`, unit: 'charges/s',
      baseline: { label: 'fake alone, lookups/s', contender: 'acquirer', key: 'lookups' }, maxRatio: 0.5, target: '< 0.5×: the fake is not the bottleneck',
    },
    { key: 'reconciled2', name: `reconcile ${count(stale)} stale PENDING charges, 2 reconcilers`, unit: 'charges/s', baseline: { label: 'rastro, 1 reconciler', contender: 'rastro', key: 'reconciled1' } },
  ],
  targets: `
Target: a charge costs at most ${MAX_COST}× an idempotent deposit on the same server, that is
\`POST /charges\` answers at least ${1 / MAX_COST}× as many requests per second as
\`POST /accounts/{id}/deposit\` with an \`Idempotency-Key\` (the first row's ratio is deposit time /
charge time). The fake rows check that the acquirer fake, measured alone, is not what limits the
rastro rows; the others have no target.
`,
  notes: (medians) => {
    const { acquirer, rastro } = medians;
    return `
Run alone: \`npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node bench/run.js charges\`.

Every process below is a process of its own: the contender (the load generator), the server
under test, the acquirer fake and each reconciler; they share the machine's 2 cores with
PostgreSQL. Runs are interleaved (acquirer, rastro, acquirer, ...) and each cell is the median of
the runs' values. The load generator is the http-api section's: \`node:http\` with a keep-alive
\`http.Agent\` of ${connections} sockets, ${connections} loops each sending one request at a time, ${warmupMs / 1000} s warm-up,
then ${durationMs / 1000} s measured (requests in flight at the deadline finish and count); latency is per
request, at the client. Every request carries a new \`Idempotency-Key\` (a random UUID).

- **acquirer**: rastro's real-HTTP acquirer fake (\`startAcquirerFake\`, no delay, no faults) alone
  in its own process, loaded like the server: \`POST /captures\` with a new key (201), then
  \`GET /captures/{key}\` of the keys it captured (200, \`captured\`). Its ceilings here:
  ${count(Math.round(acquirer.captures))} captures/s (p50 ${ms(acquirer.captureP50)} ms,
  ${ms(acquirer.captureCpuMs)} ms of its CPU per capture), ${count(Math.round(acquirer.lookups))} lookups/s.
- **rastro**: \`startServer\` from \`dist/\` as \`rastro serve\` runs it (Fastify, a \`pg\` pool of 10,
  the outbox relay on with its in-process publisher) with \`acquirerUrl\` the fake above in a
  process of its own and serve's reconciliation loop off (\`reconcileIntervalSeconds: 0\`), in a
  fresh schema dropped afterwards.
  - **charges**: \`POST /charges\` \`{ "amountCents": 2500, "customerId": "bench customer" }\`, each answered
    201 CAPTURED: one transaction commits the charge, its capture reserved in the effect ledger
    and a \`ChargeStarted\` outbox message; the acquirer is called with the key (\`fetch\`); a second
    transaction records the capture and \`ChargeCaptured\`; the charge is read back for the
    answer. After the load the bench checks that every charge sent is CAPTURED and that the fake
    captured exactly as many.
  - **idempotent deposits**: ${connections} accounts opened through \`POST /accounts\`; each connection deposits
    \`{ "amount": 1 }\` into its own account with a new \`Idempotency-Key\`: the key claimed (one
    statement), then one transaction reads the account, appends the event and stores the response.
  - Which of the two loads runs first alternates from run to run. **Server CPU** is the server
    process's user + system CPU time over the whole load (warm-up included) divided by its
    requests; it includes the relay publishing the charges' outbox messages. The fake used
    ${ms(rastro.acquirerCpuMs)} ms of its CPU per charge.
  - **reconciliation**: ${count(stale)} charges left PENDING by a process that died after the acquirer
    captured, before it wrote the outcome: inserted by SQL in one transaction into a fresh schema
    (setup, not measured) with what \`createCharges\` commits first (src/charges/sql.ts \`insert\` and
    \`reserve\`: the charge, its \`charge.capture\` reservation with owner token 0, and the
    \`ChargeStarted\` outbox message), reserved ${staleMinutes} minutes ago: past the 2 min deadline and the
    5 min lease, before the 30 min review deadline. The fake is then given their captures (\`POST
    /captures\` with each key, setup). The clock runs while \`reconcileEffects(store, { types:
    charges.effectTypes, limit: ${limit} })\` (8 questions at once) runs in each reconciler process, from
    the moment all are told to start until the last finds nothing claimable: each charge is
    claimed, looked up at the acquirer (\`captured\`), and settled CAPTURED with \`ChargeCaptured\` in
    one transaction. The bench checks all ${count(stale)} are \`done\`, each looked up exactly once.
    Two reconcilers are two such processes on the same rows (\`FOR UPDATE SKIP LOCKED\` keeps them apart).

The machine is shared and busy: absolute rates move from one run to the next with whatever else
runs; the charge/deposit ratio, measured in the same server minutes apart, moves much less.
bench/run.js prints every run's values. \`BENCH_RUNS\`, \`BENCH_HTTP_DURATION_MS\`,
\`BENCH_HTTP_WARMUP_MS\` and \`BENCH_STALE_CHARGES\` override the defaults (3 runs, ${durationMs / 1000} s, ${warmupMs / 1000} s,
${count(stale)}); \`BENCH_SERVER_CPU_PROF=<dir>\` writes a CPU profile of every server child (server,
fake, reconcilers).
`;
  },
};
