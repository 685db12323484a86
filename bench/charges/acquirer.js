// The acquirer fake alone (bench/charges/acquirer-server.js, its own process): its ceiling under
// the same 16 connections, for captures (each a new Idempotency-Key) and for lookups of captured
// keys, the two calls charges and reconciliation make. What the rastro rows must stay well under
// for the fake not to be what they measure.
import { runContender } from '../shared/contender.js';
import { startServerChild } from '../shared/server-child.js';
import { httpClient } from '../http-api/workload.js';
import { CHARGE_BODY, CHARGES, countedLoad, expectStatus, newKey } from './workload.js';

const body = { ...CHARGE_BODY, currency: 'BRL' };

await runContender(async () => {
  const acquirer = await startServerChild(new URL('./acquirer-server.js', import.meta.url));
  const client = httpClient(acquirer.info.url, CHARGES.connections);
  try {
    const keys = [];
    const cpuBefore = (await acquirer.command('stats')).cpuMs;
    const captures = await countedLoad(async () => {
      const headers = newKey();
      await expectStatus(client, 201, 'POST', '/captures', body, headers);
      keys.push(headers['idempotency-key']);
    });
    const afterCaptures = await acquirer.command('stats');
    if (afterCaptures.captured !== captures.requests) throw new Error(`the fake holds ${afterCaptures.captured} captures after ${captures.requests} requests`);
    let next = 0;
    const lookups = await countedLoad(() => expectStatus(client, 200, 'GET', `/captures/${encodeURIComponent(keys[next++ % keys.length])}`));
    return {
      captures: captures.perSecond,
      captureP50: captures.p50,
      captureCpuMs: (afterCaptures.cpuMs - cpuBefore) / captures.requests,
      lookups: lookups.perSecond,
    };
  } finally {
    client.close();
    await acquirer.close();
  }
});
