import { startServerChild } from '../shared/server-child.js';
import { httpClient } from '../http-api/workload.js';
import { CHARGE_BODY, countedLoad, expectStatus, newKey } from './workload.js';
const here = (n) => new URL(`./${n}`, import.meta.url);
const acquirer = await startServerChild(here('acquirer-server.js'));
const variants = (process.env.VARIANTS ?? 'relay,norelay,relay,norelay').split(',');
for (const v of variants) {
  const server = await startServerChild(here('rastro-server.js'), { acquirerUrl: acquirer.info.url, relay: v === 'relay' });
  const client = httpClient(server.info.url, 16);
  const cpu0 = await server.command('cpu');
  const what = process.env.WHAT ?? 'charges';
  let accounts = [];
  if (what === 'deposits') for (let i = 0; i < 16; i++) accounts.push(JSON.parse((await expectStatus(client, 201, 'POST', '/accounts', { owner: 'x' })).text).id);
  const r = await countedLoad((c) => what === 'charges' ? expectStatus(client, 201, 'POST', '/charges', CHARGE_BODY, newKey()) : expectStatus(client, 201, 'POST', `/accounts/${accounts[c]}/deposit`, { amount: 1 }, newKey()));
  const cpu = ((await server.command('cpu')) - cpu0) / r.requests;
  console.log(v, what, Math.round(r.perSecond), 'p50', r.p50.toFixed(1), 'cpu ms', cpu.toFixed(2));
  client.close();
  await server.close();
}
await acquirer.close();
