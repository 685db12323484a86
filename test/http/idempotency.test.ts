import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.js';
import { testApp } from '../support/app.js';

describe.each(backends())('Idempotency-Key on $name', (backend) => {
  it('replays the first response for a retry with the same key and body, appending nothing', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const first = await t.post(`/accounts/${id}/deposit`, { amount: 250 }, { 'idempotency-key': 'dep-1' });
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const events = await t.eventCount();
    const retry = await t.post(`/accounts/${id}/deposit`, { amount: 250 }, { 'idempotency-key': 'dep-1' });
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toEqual(first.json());
    expect(await t.eventCount()).toBe(events);
    expect((await t.get(`/accounts/${id}/balance`)).json().balance).toBe(250);
  });

  it('treats the same body with keys in another order as the same request', async () => {
    const t = await testApp(backend);
    const first = await t.app.inject({ method: 'POST', url: '/accounts', payload: '{"owner":"Ana"}', headers: { 'content-type': 'application/json', 'idempotency-key': 'k' } });
    const retry = await t.app.inject({ method: 'POST', url: '/accounts', payload: '{ "owner" : "Ana" }', headers: { 'content-type': 'application/json', 'idempotency-key': 'k' } });
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toEqual(first.json());
    expect(await t.eventCount()).toBe(1);
  });

  it('refuses the same key with a different body or on another route with 422', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    await t.post(`/accounts/${id}/deposit`, { amount: 1 }, { 'idempotency-key': 'k-1' });
    const other = await t.post(`/accounts/${id}/deposit`, { amount: 2 }, { 'idempotency-key': 'k-1' });
    expect(other.statusCode).toBe(422);
    expect(other.json()).toMatchObject({ code: 'RASTRO_IDEMPOTENCY_KEY_REUSED' });
    const route = await t.post(`/accounts/${id}/withdraw`, { amount: 1 }, { 'idempotency-key': 'k-1' });
    expect(route.statusCode).toBe(422);
    expect((await t.get(`/accounts/${id}/balance`)).json().balance).toBe(1);
  });

  it('answers 409 while a request with the same key is in flight', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const { requestFingerprint } = await import('../../packages/server/src/http/idempotency-keys.js');
    const claim = await t.keys.claim('busy', requestFingerprint('POST', `/accounts/${id}/deposit`, { amount: 5 }));
    expect(claim.kind).toBe('claimed');
    const res = await t.post(`/accounts/${id}/deposit`, { amount: 5 }, { 'idempotency-key': 'busy' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ code: 'RASTRO_IDEMPOTENCY_IN_FLIGHT' });
    expect(await t.eventCount()).toBe(1);
  });

  it('stores a final client error such as insufficient funds and replays it', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const first = await t.post(`/accounts/${id}/withdraw`, { amount: 5 }, { 'idempotency-key': 'w-1' });
    expect(first.statusCode).toBe(422);
    await t.post(`/accounts/${id}/deposit`, { amount: 100 });
    const retry = await t.post(`/accounts/${id}/withdraw`, { amount: 5 }, { 'idempotency-key': 'w-1' });
    expect(retry.statusCode).toBe(422);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.headers['content-type']).toContain('application/problem+json');
    expect(retry.json()).toEqual(first.json());
  });

  it('releases the key when the request fails in a way a retry can cure (412)', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const stale = await t.post(`/accounts/${id}/deposit`, { amount: 5 }, { 'idempotency-key': 'r-1', 'if-match': 'W/"9"' });
    expect(stale.statusCode).toBe(412);
    const retry = await t.post(`/accounts/${id}/deposit`, { amount: 5 }, { 'idempotency-key': 'r-1', 'if-match': 'W/"1"' });
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
  });

  it('applies a burst of 20 concurrent same-key requests once', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => t.post(`/accounts/${id}/deposit`, { amount: 10 }, { 'idempotency-key': 'burst' })),
    );
    const statuses = responses.map((res) => res.statusCode);
    expect(statuses.every((status) => status === 201 || status === 409)).toBe(true);
    const originals = responses.filter((res) => res.statusCode === 201 && res.headers['idempotent-replayed'] === undefined);
    expect(originals).toHaveLength(1);
    for (const res of responses.filter((r) => r.statusCode === 201)) expect(res.json()).toEqual(originals[0]!.json());
    expect((await t.get(`/accounts/${id}/balance`)).json()).toMatchObject({ balance: 10, version: 2 });
  });

  it('replays a finished deposit for a retry whose If-Match has gone stale since', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    const headers = { 'idempotency-key': 'im-1', 'if-match': 'W/"1"' };
    const first = await t.post(`/accounts/${id}/deposit`, { amount: 3 }, headers);
    expect(first.statusCode).toBe(201);
    const retry = await t.post(`/accounts/${id}/deposit`, { amount: 3 }, headers);
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toEqual(first.json());
    expect(await t.eventCount()).toBe(2);
  });

  it('replays a finished withdrawal although the balance no longer covers it', async () => {
    const t = await testApp(backend);
    const id = await t.openAccount();
    await t.post(`/accounts/${id}/deposit`, { amount: 100 });
    const first = await t.post(`/accounts/${id}/withdraw`, { amount: 100 }, { 'idempotency-key': 'w-all' });
    expect(first.statusCode).toBe(201);
    const retry = await t.post(`/accounts/${id}/withdraw`, { amount: 100 }, { 'idempotency-key': 'w-all' });
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toEqual(first.json());
    expect((await t.get(`/accounts/${id}/balance`)).json()).toMatchObject({ balance: 0, version: 3 });
  });

  it('applies one of two requests sent at once with the same key on two accounts, and refuses the other with 422', async () => {
    const t = await testApp(backend);
    const [a, b] = [await t.openAccount('A'), await t.openAccount('B')];
    const responses = await Promise.all([
      t.post(`/accounts/${a}/deposit`, { amount: 5 }, { 'idempotency-key': 'shared' }),
      t.post(`/accounts/${b}/deposit`, { amount: 5 }, { 'idempotency-key': 'shared' }),
    ]);
    expect(responses.map((res) => res.statusCode).sort()).toEqual([201, 422]);
    expect(responses.find((res) => res.statusCode === 422)!.json()).toMatchObject({ code: 'RASTRO_IDEMPOTENCY_KEY_REUSED' });
    expect(await t.eventCount()).toBe(3);
  });

  it('forgets keys after their time to live, and the cleanup job removes them', async () => {
    const t = await testApp(backend, { idempotencyTtlSeconds: 1 });
    const id = await t.openAccount();
    await t.post(`/accounts/${id}/deposit`, { amount: 1 }, { 'idempotency-key': 'old' });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const again = await t.post(`/accounts/${id}/deposit`, { amount: 2 }, { 'idempotency-key': 'old' });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await t.keys.cleanup()).toBe(1);
    const { rows } = await t.db.query<{ n: number }>(`select count(*)::int as n from "${t.schema}".idempotency_keys`);
    expect(rows[0]!.n).toBe(0);
  });

  it('rejects a malformed key with 422', async () => {
    const t = await testApp(backend);
    const res = await t.post('/accounts', { owner: 'A' }, { 'idempotency-key': 'x'.repeat(256) });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ field: 'Idempotency-Key' });
    expect(await t.eventCount()).toBe(0);
  });
});
