// The acquirer fake alone (bench/charges/acquirer-server.js, its own process): its ceiling under
// the same 16 connections, for captures (each a new Idempotency-Key) and for lookups of captured
// keys, the two calls charges and reconciliation make. What the rastro rows must stay well under
// for the fake not to be what they measure.
import { runContender } from '../shared/contender.js';
import { startServerChild } from '../shared/server-child.js';
import { httpClient } from '../http-api/workload.js';
import { CHARGE_BODY, CHARGES, expectStatus, loadsInTurns, newKey } from './workload.js';

const body = { ...CHARGE_BODY, currency: 'BRL' };

await runContender(async (run) => {
  const acquirer = await startServerChild(new URL('./acquirer-server.js', import.meta.url));
  const client = httpClient(acquirer.info.url, CHARGES.connections);
  try {
    const keys = [];
    const capture = async () => {
      const headers = newKey();
      await expectStatus(client, 201, 'POST', '/captures', body, headers);
      keys.push(headers['idempotency-key']);
    };
    const cpu = async () => ({ cpuMs: (await acquirer.command('stats')).cpuMs });
    const { captures } = await loadsInTurns({ captures: { op: capture, sample: cpu } }, run);
    const { captured } = await acquirer.command('stats');
    if (captured !== captures.requests) throw new Error(`the fake holds ${captured} captures after ${captures.requests} requests`);
    let next = 0;
    const lookup = () => expectStatus(client, 200, 'GET', `/captures/${encodeURIComponent(keys[next++ % keys.length])}`);
    const { lookups } = await loadsInTurns({ lookups: { op: lookup } }, run);
    return { captures: captures.perSecond, captureP50: captures.p50, captureCpuMs: captures.perRequest.cpuMs, lookups: lookups.perSecond };
  } finally {
    client.close();
    await acquirer.close();
  }
});
