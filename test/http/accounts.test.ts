import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.js';
import { testApp } from '../support/app.js';

describe.each(backends())('account ledger API on $name', (backend) => {
  it('opens an account: 201 with id, owner and createdAt; its balance starts at 0', async () => {
    const t = await testApp(backend);
    const res = await t.post('/accounts', { owner: 'Ana Souza' });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), owner: 'Ana Souza', createdAt: expect.any(String) });
    expect(Number.isNaN(Date.parse(body.createdAt))).toBe(false);
    const balance = await t.get(`/accounts/${body.id}/balance`);
    expect(balance.statusCode).toBe(200);
    expect(balance.json()).toEqual({ accountId: body.id, balance: 0, version: 1 });
    expect(balance.headers.etag).toBe('W/"1"');
  });

  it('adds deposits and subtracts withdrawals, returning the appended event', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const deposit = await t.post(`/accounts/${id}/deposit`, { amount: 500 });
    expect(deposit.statusCode).toBe(201);
    expect(deposit.json()).toEqual({ id: expect.any(String), type: 'AccountDeposited', amount: 500, version: 2, occurredAt: expect.any(String) });
    const withdrawal = await t.post(`/accounts/${id}/withdraw`, { amount: 200 });
    expect(withdrawal.statusCode).toBe(201);
    expect(withdrawal.json()).toMatchObject({ type: 'AccountWithdrawn', amount: 200, version: 3 });
    expect((await t.get(`/accounts/${id}/balance`)).json()).toMatchObject({ balance: 300, version: 3 });
  });

  it('accepts exactly 1,000,000,000 and withdraws the whole balance to 0', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    expect((await t.post(`/accounts/${id}/deposit`, { amount: 1_000_000_000 })).statusCode).toBe(201);
    expect((await t.post(`/accounts/${id}/withdraw`, { amount: 1_000_000_000 })).statusCode).toBe(201);
    expect((await t.get(`/accounts/${id}/balance`)).json().balance).toBe(0);
  });

  it('rejects a withdrawal above the replayed balance with 422 insufficient funds and appends nothing', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    await t.post(`/accounts/${id}/deposit`, { amount: 100 });
    const before = await t.eventCount();
    const res = await t.post(`/accounts/${id}/withdraw`, { amount: 101 });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({ status: 422, code: 'RASTRO_INSUFFICIENT_FUNDS', detail: expect.stringContaining('insufficient funds') });
    expect(await t.eventCount()).toBe(before);
    expect((await t.post(`/accounts/${id}/withdraw`, { amount: 1 })).statusCode).toBe(201);
    const empty = await t.openAccount('Bia');
    expect((await t.post(`/accounts/${empty}/withdraw`, { amount: 1 })).statusCode).toBe(422);
  });

  it.each([
    ['a float', 10.5],
    ['a numeric string', '100'],
    ['null', null],
    ['true', true],
    ['an array', [100]],
    ['an object', { value: 100 }],
    ['zero', 0],
    ['a negative amount', -5],
    ['more than 1,000,000,000', 1_000_000_001],
    ['a huge number', 1e300],
  ])('rejects %s as amount with 422 and appends nothing', async (_case, amount) => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const before = await t.eventCount();
    for (const route of ['deposit', 'withdraw']) {
      const res = await t.post(`/accounts/${id}/${route}`, { amount });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ type: 'about:blank', title: 'Unprocessable Content', status: 422, instance: `/accounts/${id}/${route}` });
      expect(res.json().detail).toContain('amount');
    }
    expect(await t.eventCount()).toBe(before);
  });

  it('rejects a missing amount and unknown fields with 422', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    expect((await t.post(`/accounts/${id}/deposit`, {})).statusCode).toBe(422);
    expect((await t.post(`/accounts/${id}/deposit`, { amount: 5, currency: 'BRL' })).statusCode).toBe(422);
    expect((await t.post(`/accounts/${id}/deposit`, [5])).statusCode).toBe(422);
  });

  it.each([
    ['missing', {}],
    ['empty', { owner: '' }],
    ['only spaces', { owner: '   ' }],
    ['201 characters', { owner: 'x'.repeat(201) }],
    ['a number', { owner: 42 }],
    ['null', { owner: null }],
  ])('rejects an owner that is %s with 422', async (_case, body) => {
    const t = await testApp(backend);
    const res = await t.post('/accounts', body);
    expect(res.statusCode).toBe(422);
    expect(await t.eventCount()).toBe(0);
  });

  it('accepts an owner of exactly 200 characters', async () => {
    const t = await testApp(backend);
    expect((await t.post('/accounts', { owner: 'x'.repeat(200) })).statusCode).toBe(201);
  });

  it('lists an account’s events in order, paged with after and limit', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount('Ana');
    for (const amount of [10, 20, 30]) await t.post(`/accounts/${id}/deposit`, { amount });
    await t.post(`/accounts/${id}/withdraw`, { amount: 5 });
    const all = (await t.get(`/accounts/${id}/events`)).json().events;
    expect(all.map((event: { type: string; version: number }) => [event.type, event.version])).toEqual([
      ['AccountOpened', 1],
      ['AccountDeposited', 2],
      ['AccountDeposited', 3],
      ['AccountDeposited', 4],
      ['AccountWithdrawn', 5],
    ]);
    expect(all[0]).toMatchObject({ owner: 'Ana' });
    const page = (await t.get(`/accounts/${id}/events?after=2&limit=2`)).json().events;
    expect(page.map((event: { amount: number }) => event.amount)).toEqual([20, 30]);
    expect((await t.get(`/accounts/${id}/events?limit=0`)).statusCode).toBe(422);
    expect((await t.get(`/accounts/${id}/events?after=-1`)).statusCode).toBe(422);
    expect((await t.get(`/accounts/${id}/events?limit=abc`)).statusCode).toBe(422);
  });

  it('keeps accounts apart: balances and event lists never mix', async () => {
    const t = await testApp(backend);
    const a = await t.openAccount('A');
    const b = await t.openAccount('B');
    await t.post(`/accounts/${a}/deposit`, { amount: 700 });
    await t.post(`/accounts/${b}/deposit`, { amount: 30 });
    expect((await t.get(`/accounts/${a}/balance`)).json().balance).toBe(700);
    expect((await t.get(`/accounts/${b}/balance`)).json().balance).toBe(30);
    expect((await t.post(`/accounts/${b}/withdraw`, { amount: 31 })).statusCode).toBe(422);
    expect((await t.get(`/accounts/${b}/events`)).json().events).toHaveLength(2);
  });

  it('answers 404 for an unknown or malformed account id on every route', async () => {
    const t = await testApp(backend);
    for (const id of ['6f1c2a1e-0000-4000-8000-000000000000', 'not-a-uuid', '1']) {
      for (const res of [
        await t.get(`/accounts/${id}/balance`),
        await t.get(`/accounts/${id}/events`),
        await t.post(`/accounts/${id}/deposit`, { amount: 1 }),
        await t.post(`/accounts/${id}/withdraw`, { amount: 1 }),
      ]) {
        expect(res.statusCode).toBe(404);
        expect(res.json()).toMatchObject({ status: 404, code: 'RASTRO_ACCOUNT_NOT_FOUND' });
      }
    }
    expect(await t.eventCount()).toBe(0);
  });

  it('answers 400 for malformed JSON and 415 for another content type, writing nothing', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const malformed = await t.app.inject({ method: 'POST', url: `/accounts/${id}/deposit`, payload: '{"amount": 1', headers: { 'content-type': 'application/json' } });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.headers['content-type']).toContain('application/problem+json');
    const text = await t.app.inject({ method: 'POST', url: `/accounts/${id}/deposit`, payload: 'amount=1', headers: { 'content-type': 'text/plain' } });
    expect(text.statusCode).toBe(415);
    const form = await t.app.inject({ method: 'POST', url: '/accounts', payload: 'owner=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.statusCode).toBe(415);
    const none = await t.app.inject({ method: 'POST', url: '/accounts' });
    expect(none.statusCode).toBe(415);
    const empty = await t.app.inject({ method: 'POST', url: '/accounts', payload: '', headers: { 'content-type': 'application/json' } });
    expect(empty.statusCode).toBe(400);
    const proto = await t.app.inject({ method: 'POST', url: '/accounts', payload: '{"__proto__":{"x":1},"owner":"a"}', headers: { 'content-type': 'application/json' } });
    expect(proto.statusCode).toBe(400);
    expect(await t.eventCount()).toBe(1);
  });

  it('sends ETag W/"<version>" and refuses a POST whose If-Match is stale with 412', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const etag = (await t.get(`/accounts/${id}/balance`)).headers.etag as string;
    expect((await t.post(`/accounts/${id}/deposit`, { amount: 10 }, { 'if-match': etag })).statusCode).toBe(201);
    const stale = await t.post(`/accounts/${id}/deposit`, { amount: 10 }, { 'if-match': etag });
    expect(stale.statusCode).toBe(412);
    expect(stale.json()).toMatchObject({ status: 412, code: 'RASTRO_PRECONDITION_FAILED' });
    expect((await t.post(`/accounts/${id}/withdraw`, { amount: 1 }, { 'if-match': 'garbage' })).statusCode).toBe(412);
    expect((await t.post(`/accounts/${id}/withdraw`, { amount: 1 }, { 'if-match': '"2"' })).statusCode).toBe(201);
    expect((await t.post(`/accounts/${id}/withdraw`, { amount: 1 }, { 'if-match': '*' })).statusCode).toBe(201);
    expect((await t.get(`/accounts/${id}/balance`)).json()).toMatchObject({ balance: 8, version: 4 });
  });

  it('requires the API key on every route but the probes and the API docs when one is set', async () => {
    const t = await testApp(backend, { apiKey: 's3cret' });
    expect((await t.get('/healthz')).statusCode).toBe(200);
    const missing = await t.post('/accounts', { owner: 'A' });
    expect(missing.statusCode).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer');
    expect(missing.json()).toMatchObject({ status: 401, code: 'RASTRO_UNAUTHORIZED' });
    expect((await t.post('/accounts', { owner: 'A' }, { authorization: 'Bearer wrong' })).statusCode).toBe(401);
    expect((await t.post('/accounts', { owner: 'A' }, { authorization: 's3cret' })).statusCode).toBe(401);
    // The API's description is open, so the docs page works in a browser; it declares the key.
    const described = await t.get('/openapi.json');
    expect(described.statusCode).toBe(200);
    expect(described.json().components.securitySchemes).toEqual({ bearer: { type: 'http', scheme: 'bearer' } });
    expect((await t.app.inject({ method: 'GET', url: '/docs/' })).statusCode).toBe(200);
    expect((await t.get('/docs/json')).statusCode).toBe(200);
    expect(await t.eventCount()).toBe(0);
    const ok = await t.post('/accounts', { owner: 'A' }, { authorization: 'Bearer s3cret' });
    expect(ok.statusCode).toBe(201);
  });

  it('publishes an OpenAPI document of the routes and an interactive docs page', async () => {
    const t = await testApp(backend);
    const doc = (await t.get('/openapi.json')).json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/accounts', '/accounts/{id}/balance', '/accounts/{id}/deposit', '/accounts/{id}/withdraw', '/accounts/{id}/events']),
    );
    expect(doc.paths['/accounts/{id}/deposit'].post.requestBody.content['application/json'].schema.properties.amount).toMatchObject({ type: 'integer', maximum: 1_000_000_000 });
    const page = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('swagger');
  });
});
