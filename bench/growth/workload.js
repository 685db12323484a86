// The growth workload: a log of BENCH_GROWTH_BASE events and one of BENCH_GROWTH_EVENTS
// (bench/growth/build-log.js), each in a fresh schema; then, against both in alternating turns,
// appends at 8 clients, readStream and balance latency of 50-event streams, and a live runner's
// commit-to-handled latency. The section compares the two logs' values.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createEventStore, defineProcessor, migrate, openDatabase, runLive } from 'rastro';
import { createAccountLedger } from 'rastro/internal/accounts/account-ledger.js';
import { DATABASE_URL } from '../shared/database.js';
import { median } from '../shared/measure.js';
import { poolErrors } from '../shared/pools.js';
import { percentile } from '../http-api/workload.js';
import { buildLog, EVENTS_PER_ACCOUNT } from './build-log.js';

const env = (name, fallback) => Number(process.env[name] ?? fallback);

export const GROWTH = Object.freeze({
  /** The grown log, and the log it is compared with. */
  events: env('BENCH_GROWTH_EVENTS', 10_000_000),
  base: env('BENCH_GROWTH_BASE', 100_000),
  clients: 8,
  /** Each measurement alternates the two logs in this many turns. */
  turns: 8,
  /** Appends: a round of this many ms per log and turn; the median round counts. */
  appendMs: env('BENCH_GROWTH_APPEND_MS', 3_000),
  /** Sequential reads of random streams (accounts) per log, spread over the turns. */
  reads: { measured: env('BENCH_GROWTH_READS', 4_000) },
  /** Probe events a live runner handles, one at a time, 10 to 30 ms apart. */
  probes: { warmup: 20, measured: env('BENCH_GROWTH_PROBES', 300) },
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The id of account number `n` of a built log: as build-log.js makes it (md5 of its number). */
async function accountIds(db, first, count) {
  const { rows } = await db.query(`select md5('growth-account:' || n)::uuid::text as id from generate_series($1::bigint, $2::bigint) n order by n`, [first, first + count - 1]);
  return rows.map((row) => row.id);
}

/** Accounts the appends go to, and how many accounts the reads choose from, in either log. */
const APPEND_ACCOUNTS = 800;
export const readAccounts = () => Math.min(20_000, Math.min(GROWTH.base, GROWTH.events) / EVENTS_PER_ACCOUNT - APPEND_ACCOUNTS);

/** Measurement turns: the base log's and the grown log's alternate, the order flipping each turn. */
const TURNS = GROWTH.turns;

/** `fn(log)` for both logs, in `TURNS` turns that alternate them, so that what else runs on the machine weighs on both alike. */
async function inTurns(logs, fn) {
  for (let turn = 0; turn < TURNS; turn += 1) {
    for (const log of turn % 2 === 0 ? logs : [...logs].reverse()) await fn(log, turn);
  }
}

/** Appends of one event at a time by `clients` loops, each to streams of its own at their exact version: appends per second. */
async function appendRound(log, ms) {
  const { clients } = GROWTH;
  let done = 0;
  const until = performance.now() + ms;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let i = client; performance.now() < until; i += clients) {
        const id = log.appendIds[i % log.appendIds.length];
        const { streamVersion } = await log.store.append(`account-${id}`, [{ type: 'AccountDeposited', data: { amount: 1 } }], { expectedVersion: log.versions.get(id) });
        log.versions.set(id, streamVersion);
        done += 1;
      }
    }),
  );
  return done / (ms / 1000);
}

/** Latencies in ms of `count` calls of `read(log, id)` on random accounts of the log, one at a time. */
async function reads(log, count, read) {
  const samples = [];
  for (let i = 0; i < count; i += 1) {
    const id = log.readIds[Math.floor(Math.random() * log.readIds.length)];
    const start = performance.now();
    await read(log, id);
    samples.push(performance.now() - start);
  }
  return samples;
}

const readStream = async (log, id) => {
  const events = await log.store.readStream(`account-${id}`);
  if (events.length !== EVENTS_PER_ACCOUNT) throw new Error(`stream account-${id} has ${events.length} events`);
};

const readBalance = async (log, id) => {
  const account = await log.ledger.get(id);
  if (account.balance !== EVENTS_PER_ACCOUNT - 1) throw new Error(`account ${id} has a balance of ${account.balance}`);
};

/**
 * A live runner per log, of a processor of `GrowthProbe` events, a type neither log holds:
 * `probe(n)` appends one and resolves the ms from its append resolving to its handler running.
 * `firstMs`: from the runner's start to its first probe handled (its first read goes through
 * the whole log).
 */
async function startProbes(log) {
  const handled = new Map();
  const processor = defineProcessor({
    name: 'growth-probe',
    handlers: { GrowthProbe: async (event) => void handled.set(event.data.n, performance.now()) },
  });
  const probe = async (n) => {
    await log.store.append(`probe-${n % 16}`, [{ type: 'GrowthProbe', data: { n } }]);
    const committed = performance.now();
    for (const deadline = committed + 60_000; !handled.has(n); await sleep(0.2)) {
      if (performance.now() > deadline) throw new Error(`probe ${n} was not handled within 60 s`);
    }
    return handled.get(n) - committed;
  };
  const started = performance.now();
  const runner = await runLive(processor, { store: log.store, policy: {}, pollIntervalMs: 1000 });
  await probe(0);
  return { probe, firstMs: performance.now() - started, stop: () => runner.stop() };
}

/** A log of `events` events in a fresh schema of `db`: its store, a ledger that remembers nothing, and accounts to use. */
async function openLog(db, label, events) {
  const schema = `bench_growth_${label}_${randomBytes(3).toString('hex')}`;
  await migrate(db, { schema });
  const log = { label, schema, events };
  try {
    let shown = 0;
    const built = await buildLog(schema, events, (done) => {
      if (done - shown >= 2_000_000 || done === events) console.error(`growth ${label}: ${done.toLocaleString('en-US')} of ${events.toLocaleString('en-US')} events inserted`);
      shown = done;
    });
    console.error(`growth ${label}: log of ${events.toLocaleString('en-US')} events built, indexed and vacuumed in ${built.seconds.toFixed(0)} s`);
    log.buildSeconds = built.seconds;
    log.store = createEventStore(db, { schema });
    // Nothing remembered between reads: each balance is read from the store.
    log.ledger = createAccountLedger(log.store, { cacheSize: 0 });
    // The reads' accounts are not the appends': those keep 50 events each. Both logs read as many
    // accounts (as many as the base log has left, at most 20,000), so that only the log's size differs.
    log.appendIds = await accountIds(db, 0, APPEND_ACCOUNTS);
    log.readIds = await accountIds(db, APPEND_ACCOUNTS, readAccounts());
    log.versions = new Map(log.appendIds.map((id) => [id, EVENTS_PER_ACCOUNT]));
    return log;
  } catch (err) {
    await db.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
    throw err;
  }
}

/**
 * Builds a log of BENCH_GROWTH_BASE events and one of BENCH_GROWTH_EVENTS, each in a fresh schema,
 * measures the same work against both in alternating turns, and drops them.
 */
export async function runGrowth() {
  const errors = poolErrors('rastro pool of the growth logs');
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 10, onError: errors.onError });
  const logs = [];
  const probes = [];
  try {
    logs.push(await openLog(db, 'base', GROWTH.base));
    logs.push(await openLog(db, 'grown', GROWTH.events));
    const result = {};
    const record = (log, key, value) => (result[`${log.label}${key}`] = value);

    for (const log of logs) await appendRound(log, 1_000);
    const rates = new Map(logs.map((log) => [log, []]));
    await inTurns(logs, async (log) => rates.get(log).push(await appendRound(log, GROWTH.appendMs)));
    for (const log of logs) record(log, 'Appends8', median(rates.get(log)));

    for (const [key, read] of [['ReadStream', readStream], ['Balance', readBalance]]) {
      // Warm-up: every account once, so that both logs are read from memory, not from disk.
      for (const log of logs) for (const id of log.readIds) await read(log, id);
      const samples = new Map(logs.map((log) => [log, []]));
      await inTurns(logs, async (log) => samples.get(log).push(...(await reads(log, GROWTH.reads.measured / TURNS, read))));
      for (const log of logs) {
        record(log, `${key}P50`, percentile(samples.get(log), 50));
        record(log, `${key}P99`, percentile(samples.get(log), 99));
      }
    }

    for (const log of logs) probes.push(await startProbes(log));
    const { warmup, measured } = GROWTH.probes;
    const handled = logs.map(() => []);
    for (let n = 1; n <= warmup + measured; n += 1) {
      // One probe of each log, in alternating order.
      for (const i of n % 2 === 0 ? [0, 1] : [1, 0]) {
        const ms = await probes[i].probe(n);
        if (n > warmup) handled[i].push(ms);
        await sleep(10 + Math.random() * 20);
      }
    }
    logs.forEach((log, i) => {
      record(log, 'HandledP50', percentile(handled[i], 50));
      record(log, 'HandledP99', percentile(handled[i], 99));
      record(log, 'FirstHandledMs', probes[i].firstMs);
      record(log, 'BuildSeconds', log.buildSeconds);
    });
    return result;
  } finally {
    for (const probe of probes) await probe.stop().catch(() => undefined);
    try {
      for (const log of logs) await db.query(`drop schema if exists ${log.schema} cascade`);
    } finally {
      errors.closing();
      await db.close();
    }
  }
}
