import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../packages/server/src/http/app.js';
import { createServices } from '../../packages/server/src/server.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { proxiedDatabase } from '../support/database-proxy.js';
import { eventually } from '../support/eventually.js';

const backend = postgresBackend();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** The HTTP app on a database reached through a proxy the test cuts; `direct` is the test's own connection. */
async function appThroughProxy() {
  const { db: direct, schema } = await freshSchema(backend!);
  const proxy = await proxiedDatabase(DATABASE_URL!);
  cleanups.push(() => proxy.close());
  const services = createServices(await proxy.open(), { schema, snapshotEvery: 100, idempotencyTtlSeconds: 86_400 });
  const app = await buildApp(services);
  cleanups.push(() => app.close());
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
  const get = (url: string) => app.inject({ method: 'GET', url });
  return { direct, schema, proxy, post, get };
}

describe.skipIf(!backend)('the HTTP API while the database cannot be reached', () => {
  it('answers 503 with Retry-After and a stable code, then serves the same keyed deposit once when the database is back', async () => {
    const { proxy, post, get } = await appThroughProxy();
    const opened = await post('/accounts', { owner: 'Ana' });
    const id = opened.json<{ id: string }>().id;
    expect((await post(`/accounts/${id}/deposit`, { amount: 10 }, { 'idempotency-key': 'before' })).statusCode).toBe(201);

    await proxy.cut();
    for (const res of [await post(`/accounts/${id}/deposit`, { amount: 5 }, { 'idempotency-key': 'during' }), await get(`/accounts/${id}/balance`), await post('/accounts', { owner: 'Bo' })]) {
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('2');
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.json()).toEqual({
        type: 'about:blank', title: 'Service Unavailable', status: 503, code: 'RASTRO_DATABASE_UNAVAILABLE',
        detail: 'the database is not reachable; retry later', instance: res.json().instance,
      });
      expect(res.body).not.toMatch(/127\.0\.0\.1|select|insert|ECONN|at /);
    }
    const ready = await get('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ code: 'RASTRO_NOT_READY', failing: ['database', 'migrations'], checks: { database: { status: 'failing', detail: 'the database is not reachable' } } });
    expect(ready.json().detail).toContain('database (the database is not reachable)');
    expect((await get('/healthz')).statusCode).toBe(200);

    await proxy.restore();
    const retried = await eventually(async () => {
      const res = await post(`/accounts/${id}/deposit`, { amount: 5 }, { 'idempotency-key': 'during' });
      return res.statusCode === 201 ? res : undefined;
    }, 'the retried deposit');
    const replayed = await post(`/accounts/${id}/deposit`, { amount: 5 }, { 'idempotency-key': 'during' });
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.json()).toEqual(retried.json());
    expect((await get(`/accounts/${id}/balance`)).json()).toMatchObject({ balance: 15, version: 3 });
    expect((await get('/readyz')).statusCode).toBe(200);
  });

  it('keeps 500 for a fault that is not an outage, without its SQL', async () => {
    const { direct, schema, post } = await appThroughProxy();
    const id = (await post('/accounts', { owner: 'Ana' })).json<{ id: string }>().id;
    await direct.query(`alter table "${schema}".idempotency_keys rename to idempotency_keys_gone`);
    const res = await post(`/accounts/${id}/deposit`, { amount: 5 }, { 'idempotency-key': 'k' });
    expect(res.statusCode).toBe(500);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.json()).toMatchObject({ status: 500, detail: 'the server could not complete the request; it has been logged' });
    expect(res.body).not.toContain('idempotency_keys');
  });
});
