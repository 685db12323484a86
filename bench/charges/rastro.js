// rastro: `POST /charges` and `POST /accounts/{id}/deposit` with an Idempotency-Key against one
// `startServer` (bench/charges/rastro-server.js), charging at the acquirer fake in a process of
// its own; then reconciliation of stale PENDING charges by one and by two reconcilers, each in a
// process of its own (bench/charges/reconciler.js).
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { migrate, openDatabase } from 'rastro';
import { runContender } from '../shared/contender.js';
import { DATABASE_URL } from '../shared/database.js';
import { poolErrors } from '../shared/pools.js';
import { startServerChild } from '../shared/server-child.js';
import { httpClient } from '../http-api/workload.js';
import { captureAtAcquirer, CHARGE_BODY, CHARGES, expectStatus, fillStaleCharges, loadsInTurns, newKey } from './workload.js';

const here = (name) => new URL(`./${name}`, import.meta.url);

async function openAccounts(client) {
  const accounts = [];
  for (let i = 0; i < CHARGES.connections; i += 1) {
    accounts.push(JSON.parse((await expectStatus(client, 201, 'POST', '/accounts', { owner: `bench depositor ${i}` })).text).id);
  }
  return accounts;
}

/**
 * Idempotent deposits and charges against one server, in turns: rates, latencies, and the
 * server's, its PostgreSQL backends' (when readable) and for charges the fake's CPU
 * milliseconds per request. Then the checks: every
 * charge sent is CAPTURED, and the fake captured exactly as many.
 */
async function requestRows(run, acquirer) {
  const server = await startServerChild(here('rastro-server.js'), { acquirerUrl: acquirer.info.url, relay: CHARGES.relay });
  const client = httpClient(server.info.url, CHARGES.connections);
  try {
    const accounts = await openAccounts(client);
    const before = await acquirer.command('stats');
    const serverCpu = () => server.command('cpu');
    const { deposits, charges } = await loadsInTurns(
      {
        deposits: { op: (c) => expectStatus(client, 201, 'POST', `/accounts/${accounts[c]}/deposit`, { amount: 1 }, newKey()), sample: serverCpu },
        charges: {
          op: () => expectStatus(client, 201, 'POST', '/charges', CHARGE_BODY, newKey()),
          sample: async () => ({ ...(await serverCpu()), acquirerCpuMs: (await acquirer.command('stats')).cpuMs }),
        },
      },
      run,
    );
    const counts = await server.command('charges');
    // 201 is CAPTURED or FAILED, and the fake declines nothing: every charge must be CAPTURED, once.
    if (counts.CAPTURED !== charges.requests || counts.PENDING + counts.FAILED + counts.NEEDS_REVIEW !== 0) {
      throw new Error(`after ${charges.requests} charges the server holds ${JSON.stringify(counts)}`);
    }
    const captured = (await acquirer.command('stats')).captured - before.captured;
    if (captured !== charges.requests) throw new Error(`the acquirer captured ${captured} times for ${charges.requests} charges`);
    return {
      charges: charges.perSecond,
      deposits: deposits.perSecond,
      depositOverCharge: charges.perSecond / deposits.perSecond,
      chargeP50: charges.p50,
      chargeP99: charges.p99,
      depositP50: deposits.p50,
      depositP99: deposits.p99,
      chargeCpuMs: charges.perRequest.cpuMs,
      depositCpuMs: deposits.perRequest.cpuMs,
      acquirerCpuMs: charges.perRequest.acquirerCpuMs,
      // Where the server can read its PostgreSQL backends' CPU time (the same machine).
      ...(charges.perRequest.dbMs === undefined ? {} : { chargeDbMs: charges.perRequest.dbMs, depositDbMs: deposits.perRequest.dbMs }),
    };
  } finally {
    client.close();
    await server.close();
  }
}

/**
 * `CHARGES.stale` stale PENDING charges in a fresh schema, captured at the acquirer, settled by
 * `reconcilers` processes at once: charges reconciled per second, from the moment they are all
 * told to reconcile until the last has nothing claimable left.
 */
async function reconcileRow(run, acquirer, reconcilers) {
  const schema = `bench_charges_rc_${randomBytes(4).toString('hex')}`;
  const errors = poolErrors(`rastro pool for ${schema}`);
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 4, onError: errors.onError });
  const children = [];
  try {
    await migrate(db, { schema });
    const stale = await fillStaleCharges(db, schema, `bench-stale-${run}-${reconcilers}-${schema}`, CHARGES.stale);
    await captureAtAcquirer(acquirer.info.url, stale);
    for (let i = 0; i < reconcilers; i += 1) {
      children.push(await startServerChild(here('reconciler.js'), { schema, acquirerUrl: acquirer.info.url, limit: CHARGES.limit }));
    }
    await Promise.all(children.map((child) => child.command('warm')));
    const lookupsBefore = (await acquirer.command('stats')).lookups;
    const started = performance.now();
    const results = await Promise.all(children.map((child) => child.command('reconcile')));
    const seconds = (performance.now() - started) / 1000;
    const happened = results.reduce((sum, { report }) => sum + report.happened, 0);
    const lookups = (await acquirer.command('stats')).lookups - lookupsBefore;
    const { rows } = await db.query(`select state, count(*)::int as n from ${schema}.effects group by state order by state`);
    const done = rows.find((row) => row.state === 'done')?.n ?? 0;
    if (happened !== CHARGES.stale || done !== CHARGES.stale || rows.length !== 1 || lookups !== CHARGES.stale) {
      throw new Error(`${reconcilers} reconciler(s) settled ${happened} of ${CHARGES.stale} with ${lookups} lookups; effects by state: ${JSON.stringify(rows)}; reports: ${JSON.stringify(results.map((r) => r.report))}`);
    }
    return CHARGES.stale / seconds;
  } finally {
    await Promise.all(children.map((child) => child.close()));
    try {
      await db.query(`drop schema if exists ${schema} cascade`);
    } finally {
      errors.closing();
      await db.close();
    }
  }
}

await runContender(async (run) => {
  const acquirer = await startServerChild(here('acquirer-server.js'));
  try {
    const requests = await requestRows(run, acquirer);
    const reconciled1 = await reconcileRow(run, acquirer, 1);
    const reconciled2 = await reconcileRow(run, acquirer, 2);
    return { ...requests, reconciled1, reconciled2 };
  } finally {
    await acquirer.close();
  }
});
