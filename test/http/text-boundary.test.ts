import type { InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../support/app.js';
import { backends } from '../support/databases.js';

const json = { 'content-type': 'application/json' };

async function refused(t: TestApp, request: InjectOptions, status: number, field: string | undefined) {
  const before = await t.rowCounts();
  const res = await t.app.inject(request);
  expect(res.statusCode, `${res.body}`).toBe(status);
  expect(res.headers['content-type']).toContain('application/problem+json');
  expect(res.json()).toMatchObject({ status, code: 'RASTRO_UNSTORABLE_TEXT', ...(field === undefined ? {} : { field }) });
  expect(await t.rowCounts()).toEqual(before);
  return res.json<{ detail: string }>();
}

describe.each(backends())('text the database cannot store, on $name', (backend) => {
  it('refuses a lone surrogate anywhere in a JSON body with 422 naming the field, and stores nothing', async () => {
    const t = await testApp(backend);
    await t.post('/intake/pied/orders', { orderId: '7', status: 'received' });
    await refused(t, { method: 'POST', url: '/accounts', headers: json, payload: '{"owner":"a\\ud800b"}' }, 422, 'owner');
    await refused(t, { method: 'POST', url: '/intake/pied/orders', headers: json, payload: '{"orderId":"1","status":"received","items":[{"\\ud800":1}]}' }, 422, 'items[0]["\\ud800"]');
    await refused(t, { method: 'POST', url: '/intake/pied/orders', headers: json, payload: '{"orderId":"1","status":"received","a":{"b c":[["\\udfff"]]}}' }, 422, 'a["b c"][0][0]');
    await refused(t, { method: 'POST', url: '/orders/pied:7/import', headers: json, payload: '{"outcome":"failed","reason":"x\\udc00"}' }, 422, 'reason');
    await refused(t, { method: 'POST', url: '/charges', headers: { ...json, 'idempotency-key': 'k1' }, payload: '{"amountCents":100,"customerId":"\\ud83d"}' }, 422, 'customerId');
    // A surrogate pair is a character like any other.
    expect((await t.post('/accounts', { owner: 'Ana 😀' })).statusCode).toBe(201);
  });

  it('refuses NUL in a body as 422 naming the field as the client wrote it', async () => {
    const t = await testApp(backend);
    const account = await t.openAccount();
    const detail = await refused(t, { method: 'POST', url: '/accounts', headers: json, payload: '{"owner":"Ana\\u0000"}' }, 422, 'owner');
    expect(detail.detail).toMatch(/^owner: contains U\+0000/);
    await refused(t, { method: 'POST', url: `/accounts/${account}/deposit`, headers: json, payload: '{"amount":1,"\\u0000":2}' }, 422, '["\\u0000"]');
    await refused(t, { method: 'POST', url: '/ops/replays', headers: json, payload: '{"processor":"p\\u0000","simulate":true}' }, 422, 'processor');
  });

  it('refuses NUL, a surrogate or bytes that are not UTF-8 in a parameter or header with 400 naming it', async () => {
    const t = await testApp(backend);
    await refused(t, { method: 'GET', url: '/ops/parked-events?runId=%00' }, 400, 'runId');
    await refused(t, { method: 'GET', url: '/ops/runs/r1/diff?key=a%00' }, 400, 'key');
    await refused(t, { method: 'GET', url: '/ops/runs/r1/diff?projection=%00' }, 400, 'projection');
    await refused(t, { method: 'GET', url: '/ops/runs/r1/diff.csv?key=%FF' }, 400, 'key');
    await refused(t, { method: 'GET', url: '/ops/parked-events?runId=%ED%A0%80' }, 400, 'runId');
    await refused(t, { method: 'POST', url: '/ops/effects/abc%00:notify/resolve', headers: json, payload: '{"as":"done"}' }, 400, 'key');
    await refused(t, { method: 'GET', url: '/orders/pied:%00' }, 400, 'id');
    await refused(t, { method: 'POST', url: '/accounts', headers: { ...json, 'idempotency-key': 'k\u0000' }, payload: '{"owner":"Ana"}' }, 400, 'idempotency-key');
  });

  it('refuses a body that is not UTF-8 instead of storing U+FFFD in its place', async () => {
    const t = await testApp(backend);
    const body = Buffer.concat([Buffer.from('{"owner":"Jo'), Buffer.from([0xe3, 0x6f]), Buffer.from('"}')]);
    const problem = await refused(t, { method: 'POST', url: '/accounts', headers: json, payload: body }, 400, undefined);
    expect(problem.detail).toMatch(/not valid UTF-8/);
    // The same name, encoded as UTF-8, is stored as sent.
    const ok = await t.app.inject({ method: 'POST', url: '/accounts', headers: json, payload: Buffer.from('{"owner":"João"}') });
    expect(ok.json()).toMatchObject({ owner: 'João' });
  });

  it('stores control characters other than NUL as sent', async () => {
    const t = await testApp(backend);
    const res = await t.post('/accounts', { owner: 'tab\there\u0007bell\u001f' });
    expect(res.statusCode).toBe(201);
    const events = await t.get(`/accounts/${res.json().id}/events`);
    expect(events.json().events[0].owner).toBe('tab\there\u0007bell\u001f');
  });
});

describe.each(backends())('the library refuses the same text on $name', (backend) => {
  it('names the field for an owner, an event payload and an outbox message', async () => {
    const t = await testApp(backend);
    await expect(t.ledger.open('Ana\u0000')).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'owner' });
    await expect(t.store.append('s-1', [{ type: 'x', data: { list: ['ok', 'a\ud800'] } }])).rejects.toMatchObject({ field: 'events[0].data.list[1]' });
    expect(await t.eventCount()).toBe(0);
  });
});
