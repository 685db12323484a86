import { readMigrationFiles } from '../../packages/rastro/src/db/migrate.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createAmqpPublisher } from '../../packages/rastro/src/brokers/amqp.js';
import type { Publisher } from '../../packages/rastro/src/brokers/message.js';
import { createNatsPublisher } from '../../packages/rastro/src/brokers/nats.js';
import { buildApp, type AppDeps } from '../../packages/server/src/http/app.js';
import { createServices } from '../../packages/server/src/server.js';
import { backends, freshSchema, type Backend } from '../support/databases.js';
import { NATS_URL, RABBITMQ_URL, startTcpProxy } from '../support/brokers.js';
import { eventually } from '../support/eventually.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function healthApp(backend: Backend, options: Partial<Pick<AppDeps, 'apiKey' | 'publisher'>> = {}) {
  const { db, schema } = await freshSchema(backend);
  const services = createServices(db, { schema, snapshotEvery: 100, idempotencyTtlSeconds: 86_400 });
  const app = await buildApp({ ...services, ...options });
  cleanups.push(() => app.close());
  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });
  return { db, schema, app, get };
}

describe.each(backends())('health endpoints on $name', (backend) => {
  it('answers /readyz 200 with every check ok and the reader delay when all is well', async () => {
    const { get } = await healthApp(backend);
    const res = await get('/readyz');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'ready',
      checks: {
        database: { status: 'ok', kind: backend.name, readerDelay: expect.objectContaining({ heldBack: 0 }) },
        migrations: { status: 'ok' },
      },
    });
    expect((await get('/healthz')).json()).toEqual({ status: 'ok', database: backend.name });
  });

  it('answers /readyz 503 naming a migration that is not applied', async () => {
    const { db, schema, get } = await healthApp(backend);
    await db.query(`delete from "${schema}".migrations where id = (select max(id) from "${schema}".migrations)`);
    const res = await get('/readyz');
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.headers['retry-after']).toBe('2');
    const body = res.json();
    const last = (await readMigrationFiles()).at(-1)!.name;
    expect(body).toMatchObject({ status: 503, code: 'RASTRO_NOT_READY', failing: ['migrations'], checks: { database: { status: 'ok' }, migrations: { status: 'failing', pending: [last] } } });
    expect(body.detail).toContain(`not applied: ${last}`);
  });

  it('answers /readyz 503 naming an applied migration this version does not know, or one whose file changed', async () => {
    const { db, schema, get } = await healthApp(backend);
    await db.query(`insert into "${schema}".migrations (id, name, checksum) values (9999, '9999_from_the_future.sql', 'x')`);
    await db.query(`update "${schema}".migrations set checksum = 'edited' where id = 1`);
    const res = await get('/readyz');
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ failing: ['migrations'], checks: { migrations: { unknown: ['9999_from_the_future.sql'], changed: ['0001_event_store.sql'], pending: [] } } });
    expect(res.json().detail).toContain('applied but unknown to this version: 9999_from_the_future.sql');
  });

  it('serves /healthz and /readyz without the API key, and nothing else', async () => {
    const { get } = await healthApp(backend, { apiKey: 's3cret' });
    expect((await get('/healthz')).statusCode).toBe(200);
    expect((await get('/readyz')).statusCode).toBe(200);
    expect((await get('/readyz?verbose=1')).statusCode).toBe(200);
    expect((await get('/readyzz')).statusCode).toBe(401);
    expect((await get('/openapi.json', { authorization: 'Bearer s3cret' })).json().paths).toMatchObject({
      '/healthz': { get: { operationId: 'getHealth' } },
      '/readyz': { get: { operationId: 'getReadiness' } },
    });
  });
});

const postgres = backends().find((backend) => backend.name === 'postgres');

const brokers: { name: string; url: string | undefined; publisher: (url: string) => Publisher }[] = [
  { name: 'nats', url: NATS_URL, publisher: (url) => createNatsPublisher({ url, createStream: false, ackTimeoutMs: 1000 }) },
  { name: 'amqp', url: RABBITMQ_URL, publisher: (url) => createAmqpPublisher({ url }) },
];

describe.each(brokers)('/readyz with a $name broker', ({ name, url, publisher: open }) => {
  it.skipIf(!url)(`answers 503 naming the broker while the ${name} connection is cut, and 200 once it is back`, async () => {
    const target = new URL(url!);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    cleanups.push(() => proxy.close());
    target.port = String(proxy.port);
    const publisher = open(target.toString());
    cleanups.push(() => publisher.close());
    const { get } = await healthApp(postgres ?? backends()[0]!, { publisher: () => publisher });
    const healthy = await get('/readyz');
    expect(healthy.statusCode).toBe(200);
    expect(healthy.json().checks.broker).toEqual({ status: 'ok', kind: name });

    await proxy.cut();
    const down = await eventually(async () => {
      const res = await get('/readyz');
      return res.statusCode === 503 ? res : undefined;
    }, 'readiness to fail');
    expect(down.json()).toMatchObject({ failing: ['broker'], checks: { database: { status: 'ok' }, broker: { status: 'failing', kind: name } } });
    expect(down.json().detail).toContain(`broker (the ${name} broker is not reachable`);
    expect(down.body).not.toContain(String(proxy.port));
    expect((await get('/healthz')).statusCode).toBe(200);

    await proxy.restore();
    await eventually(async () => (await get('/readyz')).statusCode === 200, 'readiness after the broker is back');
  });
});
