import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import amqp from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { startAcquirerFake } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { RABBITMQ_URL } from '../support/brokers.js';
import { DATABASE_URL, postgresBackend, schemaName } from '../support/databases.js';
import { proxiedDatabase } from '../support/database-proxy.js';
import { eventually } from '../support/eventually.js';
import { spawnRastro, type RastroProcess } from '../support/rastro-process.js';

// Every long-running role, started while its database is away: none exits, each says so once
// per attempt, and each starts working when the database appears.

const FIXTURE = join(import.meta.dirname, '../fixtures/outage-processors.mjs');
const backend = postgresBackend();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
const track = (cleanup: () => Promise<unknown>) => void cleanups.push(cleanup);

const WAITING = /waiting for the database: the database is not reachable \([^)]+\); retry later \(attempt 2,/;

interface Role {
  name: string;
  args: string[];
  ready: RegExp;
}

const ROLES: Role[] = [
  { name: 'relay', args: ['relay'], ready: /relay \S+ publishing to/ },
  { name: 'live', args: ['live', 'deposits-seen', '--processors', FIXTURE], ready: /live run \S+ started/ },
  { name: 'normalize', args: ['normalize'], ready: /order normalizer running live/ },
  { name: 'reconcile', args: ['reconcile', '--every', '1'], ready: /reconciling \S+ every 1 s until stopped/ },
  { name: 'serve', args: ['serve'], ready: /rastro listening on (http:\/\/\S+)/ },
];

async function startRoles(roles: Role[], env: Record<string, string>): Promise<RastroProcess[]> {
  return Promise.all(roles.map((role) => spawnRastro(role.name, role.args, env, WAITING, track)));
}

/** Waits for every role's ready line, then stops each with SIGTERM: each exits 0. */
async function expectAllStartThenStop(processes: RastroProcess[], roles: Role[]): Promise<void> {
  for (const [i, process] of processes.entries()) {
    await eventually(() => roles[i]!.ready.test(process.output()), `${process.role} to start: ${process.output().slice(-400)}`, 30_000);
    expect(process.child.exitCode, process.role).toBeNull();
  }
  const serve = processes[roles.findIndex((role) => role.name === 'serve')];
  if (serve) {
    const url = /rastro listening on (http:\/\/\S+)/.exec(serve.output())![1]!;
    const created = await fetch(`${url}/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"owner":"Ana"}' });
    expect(created.status).toBe(201);
  }
  for (const process of processes) expect(await process.stop(), `${process.role}: ${process.output().slice(-400)}`).toBe(0);
}

describe.skipIf(!backend)('long-running roles started while the database cannot be reached', () => {
  it('wait behind a proxy that opens later, a line per attempt, then run; serve answers 503 RASTRO_STARTING meanwhile', async () => {
    const proxy = await proxiedDatabase(DATABASE_URL!);
    track(() => proxy.close());
    await proxy.cut();
    const acquirer = await startAcquirerFake();
    track(() => acquirer.close());
    const tag = randomBytes(4).toString('hex');
    const env: Record<string, string> = { DATABASE_URL: proxy.url, RASTRO_SCHEMA: schemaName(), PORT: '0', RASTRO_LOG_LEVEL: 'warn', RASTRO_ACQUIRER_URL: acquirer.url };
    track(async () => {
      const db = await backend!.db();
      await db.query(`drop schema if exists "${env.RASTRO_SCHEMA}" cascade`);
    });
    const roles = [...ROLES];
    if (RABBITMQ_URL) {
      roles.push({ name: 'consume', args: ['consume', '--queue', `t-start-${tag}`], ready: /consuming from amqp into schema/ });
      env.RASTRO_BROKER_URL = RABBITMQ_URL;
      env.RASTRO_AMQP_EXCHANGE = `t-start-${tag}`;
      track(async () => {
        const connection = await amqp.connect(RABBITMQ_URL!);
        const channel = await connection.createChannel();
        await channel.deleteQueue(`t-start-${tag}`);
        await channel.deleteExchange(`t-start-${tag}`);
        await connection.close();
      });
    }
    const processes = await startRoles(roles, env);

    const serve = processes[roles.findIndex((role) => role.name === 'serve')]!;
    const url = /(http:\/\/\S+) answers 503 meanwhile/.exec(serve.output())![1]!;
    const starting = await fetch(`${url}/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"owner":"Ana"}' });
    expect(starting.status).toBe(503);
    expect(starting.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(starting.headers.get('retry-after')).toBe('2');
    expect(await starting.json()).toMatchObject({ status: 503, code: 'RASTRO_STARTING' });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    await proxy.restore();
    await expectAllStartThenStop(processes, roles);
    // serve listened on the port it answered 503 on, and served once started.
    expect(roles[roles.findIndex((role) => role.name === 'serve')]!.ready.exec(serve.output())![1]).toBe(url);
  });

  it('wait while the server has no connection slot for them (53300), then run', async () => {
    const direct = await backend!.db();
    const role = `t_slots_${randomBytes(4).toString('hex')}`;
    const database = new URL(DATABASE_URL!).pathname.slice(1);
    await direct.query(`create role ${role} login connection limit 0`);
    await direct.query(`grant create on database "${database}" to ${role}`);
    const schema = schemaName();
    track(async () => {
      await direct.query(`drop schema if exists "${schema}" cascade`);
      await direct.query(`revoke create on database "${database}" from ${role}`);
      await direct.query(`drop role if exists ${role}`);
    });
    const url = new URL(DATABASE_URL!);
    url.username = role;
    const roles = ROLES.filter((r) => r.name === 'relay' || r.name === 'serve');
    const processes = await startRoles(roles, { DATABASE_URL: url.toString(), RASTRO_SCHEMA: schema, PORT: '0', RASTRO_LOG_LEVEL: 'warn' });
    expect(processes[0]!.output()).toContain('the database is not reachable (the server has no connection slot left)');
    await direct.query(`alter role ${role} connection limit -1`);
    await expectAllStartThenStop(processes, roles);
  });

  it('still exit 1 at once for a configuration error: a database that does not exist', async () => {
    const url = new URL(DATABASE_URL!);
    url.pathname = `/no_such_${randomBytes(4).toString('hex')}`;
    const failed = spawnRastro('relay', ['relay'], { DATABASE_URL: url.toString(), RASTRO_LOG_LEVEL: 'warn' }, /never printed/, track);
    await expect(failed).rejects.toThrow(/exited \(1\) before it was ready: .*does not exist \[RASTRO_DATABASE\]/s);
  });
});

describe.skipIf(!backend)('a reconcile loop with nothing to reconcile', () => {
  it('keeps running until SIGTERM, and says once what it waits for', async () => {
    const schema = schemaName();
    track(async () => (await backend!.db()).query(`drop schema if exists "${schema}" cascade`));
    const loop = await spawnRastro('reconcile', ['reconcile', '--every', '1'], { DATABASE_URL: DATABASE_URL!, RASTRO_SCHEMA: schema, RASTRO_LOG_LEVEL: 'warn' }, /nothing to reconcile: .*waiting for SIGINT\/SIGTERM/, track);
    // Three intervals: a loop that quit, or repeated itself, would show by now.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(loop.child.exitCode).toBeNull();
    expect(loop.output().match(/nothing to reconcile/g)).toHaveLength(1);
    expect(await loop.stop()).toBe(0);
  });
});
