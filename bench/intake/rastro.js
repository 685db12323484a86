// rastro: a normalizer round (`orders.normalizeRound()`, the live run's checkpoint) with 1,000
// new snapshots over each history, median of INTAKE.rounds rounds; then webhooks per second into
// a rastro server over 16 connections.
import { runContender } from '../shared/contender.js';
import { startServerChild } from '../shared/server-child.js';
import { median } from '../shared/measure.js';
import { httpClient } from '../http-api/workload.js';
import { INTAKE, openHistory, sizeKey } from './workload.js';

async function roundTimes(size) {
  const history = await openHistory('bench_intake_rastro', size);
  try {
    // Warm-up, not measured: the first round of a process also compiles and prepares.
    await history.addSnapshots(0);
    await history.orders.normalizeRound();
    const times = [];
    for (let round = 1; round <= INTAKE.rounds; round++) {
      await history.addSnapshots(round);
      const started = performance.now();
      const { events } = await history.orders.normalizeRound();
      times.push(performance.now() - started);
      if (events !== INTAKE.newSnapshots) throw new Error(`the round normalized ${events} events, expected ${INTAKE.newSnapshots}`);
    }
    return median(times);
  } finally {
    await history.close();
  }
}

async function webhooksPerSecond() {
  const server = await startServerChild(new URL('./intake-server.js', import.meta.url));
  const client = httpClient(server.info.url, INTAKE.connections);
  try {
    let sent = 0;
    const post = async (connection) => {
      const n = sent++;
      const body = { orderId: `w${connection}-${n}`, status: n % 3 ? 'received' : 'requested', lastUpdate: new Date(Date.UTC(2026, 8, 8) + n).toISOString(), customer: { name: `C${n}` } };
      await client.expect(202, 'POST', '/intake/pied/orders', body);
    };
    const run = async (ms) => {
      let done = 0;
      const until = performance.now() + ms;
      const started = performance.now();
      await Promise.all(Array.from({ length: INTAKE.connections }, async (_, connection) => {
        while (performance.now() < until) {
          await post(connection);
          done++;
        }
      }));
      return done / ((performance.now() - started) / 1000);
    };
    await run(INTAKE.webhookWarmupMs);
    const rate = await run(INTAKE.webhookDurationMs);
    if ((await server.command('events')) !== sent) throw new Error('not every webhook was stored');
    return rate;
  } finally {
    client.close();
    await server.close();
  }
}

await runContender(async () => {
  const results = {};
  for (const size of INTAKE.sizes) results[sizeKey(size)] = await roundTimes(size);
  results.webhooks = await webhooksPerSecond();
  return results;
});
