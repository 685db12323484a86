// The charges workload: request loads through node:http (the http-api section's client and
// sizes: 16 connections, 2 s warm-up, 10 s measured), and stale PENDING charges written by SQL
// for reconciliation.
import { createHash, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { httpClient, percentile, WORKLOAD as HTTP } from '../http-api/workload.js';

const env = (name, fallback) => Number(process.env[name] ?? fallback);

export const CHARGES = Object.freeze({
  connections: HTTP.connections,
  warmupMs: HTTP.warmupMs,
  durationMs: HTTP.durationMs,
  /** Whether the server runs serve's outbox relay (in-process publisher), as `rastro serve` does by default. */
  relay: process.env.BENCH_CHARGES_RELAY !== 'off',
  /** The measured time of each compared load, in this many turns. */
  slices: 5,
  /** Stale PENDING charges a reconciliation row settles. */
  stale: env('BENCH_STALE_CHARGES', 10_000),
  /** Effects a reconciler claims per pass: serve's loop and `reconcileEffects` default. */
  limit: 100,
  /** How old the stale charges are: past the 2 min deadline and the 5 min lease, before the 30 min review. */
  staleMinutes: 10,
});

/** What every charge of the load asks: BRL by default. */
export const CHARGE_BODY = Object.freeze({ amountCents: 2_500, customerId: 'bench customer' });

/** `connections` loops of `op(connection)` for `ms`, each one request at a time; returns how many completed. */
async function slice(op, ms, latencies) {
  let done = 0;
  const until = performance.now() + ms;
  await Promise.all(
    Array.from({ length: CHARGES.connections }, async (_, connection) => {
      while (performance.now() < until) {
        const start = performance.now();
        await op(connection);
        latencies?.push(performance.now() - start);
        done += 1;
      }
    }),
  );
  return done;
}

/**
 * Loads that are compared with each other, measured in turns so that whatever else runs on the
 * machine weighs on each alike: `loads` maps a name to `{ op, sample }`. Each load gets its
 * warm-up, then `slices` turns of `durationMs / slices` each, the order flipping every turn
 * (and with the run). `sample()` returns counters (CPU time, say) read before and after each
 * turn. Per load: requests per second and latency percentiles of the measured turns, requests
 * made in all (warm-up included) and the counters' growth per request.
 */
export async function loadsInTurns(loads, run) {
  const names = Object.keys(loads);
  const totals = Object.fromEntries(names.map((name) => [name, { requests: 0, measured: 0, seconds: 0, latencies: [], counters: {} }]));
  async function turn(name, ms, measure) {
    const { op, sample } = loads[name];
    const total = totals[name];
    const before = sample ? await sample() : {};
    const start = performance.now();
    const done = await slice(op, ms, measure ? total.latencies : undefined);
    const seconds = (performance.now() - start) / 1000;
    const after = sample ? await sample() : {};
    for (const key of Object.keys(after)) total.counters[key] = (total.counters[key] ?? 0) + after[key] - before[key];
    total.requests += done;
    if (measure) {
      total.measured += done;
      total.seconds += seconds;
    }
  }
  for (const name of names) await turn(name, CHARGES.warmupMs, false);
  for (let i = 0; i < CHARGES.slices; i += 1) {
    for (const name of (i + run) % 2 === 0 ? names : [...names].reverse()) await turn(name, CHARGES.durationMs / CHARGES.slices, true);
  }
  return Object.fromEntries(
    names.map((name) => {
      const { requests, measured, seconds, latencies, counters } = totals[name];
      const perRequest = Object.fromEntries(Object.entries(counters).map(([key, value]) => [key, value / requests]));
      return [name, { perSecond: measured / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), requests, perRequest }];
    }),
  );
}

/** `request`, failing unless the status is `status`. */
export async function expectStatus(client, status, method, path, body, headers) {
  const res = await client.request(method, path, body, headers);
  if (res.status !== status) throw new Error(`${method} ${path} answered ${res.status}, expected ${status}: ${res.text.slice(0, 300)}`);
  return res;
}

/** The fingerprint `createCharges` stores with a charge (src/charges/charges.ts). */
function requestHash({ amountCents, customerId, currency }) {
  return createHash('sha256').update(JSON.stringify([amountCents, customerId, currency])).digest('hex');
}

/**
 * `count` charges left PENDING by a process that died after the acquirer captured and before it
 * wrote the outcome, inserted by SQL in one transaction (setup, not measured): what `start`
 * commits first (sql.ts `insert` and `reserve`, and the `ChargeStarted` outbox message), their
 * reservation `staleMinutes` old, owner token 0 (no live runner). Returns the charges, for the
 * acquirer to be told about their captures.
 */
export async function fillStaleCharges(db, schema, prefix, count) {
  const charges = Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    key: `${prefix}-${i}`,
    amountCents: 1_000 + (i % 1_000),
    customerId: `bench customer ${i % 100}`,
    currency: 'BRL',
  }));
  const txOrderNow = `pg_current_xact_id()::text::bigint + (select tx_order_offset from ${schema}.store_settings)`;
  await db.transaction(async (tx) => {
    await tx.query(
      `insert into ${schema}.charges (id, idempotency_key, request_hash, customer_id, amount_cents, currency, created_at)
       select id, key, hash, customer, amount, 'BRL', now() - $6 * interval '1 minute'
         from unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bigint[]) as t(id, key, hash, customer, amount)`,
      [charges.map((c) => c.id), charges.map((c) => c.key), charges.map(requestHash), charges.map((c) => c.customerId), charges.map((c) => c.amountCents), CHARGES.staleMinutes],
    );
    await tx.query(
      `insert into ${schema}.effects (key, event_id, effect_type, state, run_id, on_failure, owner_token, reserved_at, updated_at)
       select 'charge:' || id::text, null, 'charge.capture', 'reserved', 'request', 'keep', 0, created_at, created_at from ${schema}.charges`,
    );
    await tx.query(`insert into ${schema}.outbox_aggregates (aggregate_type, aggregate_id, tx_order) select 'charge', id::text, ${txOrderNow} from ${schema}.charges`);
    await tx.query(
      `insert into ${schema}.outbox (tx_order, id, aggregate_type, aggregate_id, type, payload)
       select ${txOrderNow}, gen_random_uuid(), 'charge', id::text, 'ChargeStarted',
              jsonb_build_object('chargeId', id, 'idempotencyKey', idempotency_key, 'amountCents', amount_cents, 'currency', currency, 'customerId', customer_id)
         from ${schema}.charges order by created_at, id`,
    );
  });
  // The ledger as autovacuum leaves it within a minute of such a burst: with planner statistics.
  for (const table of ['charges', 'effects', 'outbox']) await db.query(`vacuum analyze ${schema}.${table}`);
  return charges;
}

/** Makes the captures of `charges` at the acquirer, as the requests that died had (setup, not measured). */
export async function captureAtAcquirer(url, charges) {
  const client = httpClient(url, CHARGES.connections);
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: CHARGES.connections }, async () => {
        while (next < charges.length) {
          const { key, amountCents, currency, customerId } = charges[next++];
          await expectStatus(client, 201, 'POST', '/captures', { amountCents, currency, customerId }, { 'idempotency-key': key });
        }
      }),
    );
  } finally {
    client.close();
  }
}

export const newKey = () => ({ 'idempotency-key': randomUUID() });
