import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable, toDatabaseError } from '../../packages/rastro/src/db/database-error.js';
import { openPostgres } from '../../packages/rastro/src/db/postgres.js';
import { DatabaseError, DatabaseUnavailableError } from '../../packages/rastro/src/errors.js';
import { DATABASE_URL, postgresBackend } from '../support/databases.js';
import { freePort } from '../support/brokers.js';

const backend = postgresBackend();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

function urlWithPort(port: number): string {
  const url = new URL(DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString();
}


describe('what counts as the database being unavailable', () => {
  it('a refused connection, with a message that names neither host nor port', async () => {
    const port = await freePort();
    const db = openPostgres({ url: urlWithPort(port) });
    cleanups.push(() => db.close());
    const err = await db.query('select 1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseUnavailableError);
    expect(err).toMatchObject({ code: 'RASTRO_DATABASE_UNAVAILABLE', message: 'the database is not reachable (connection refused); retry later' });
    expect((err as Error).message).not.toContain(String(port));
    expect(isDatabaseUnavailable(err)).toBe(true);
    await expect(db.transaction(async () => undefined)).rejects.toBeInstanceOf(DatabaseUnavailableError);
  });

  it('a server that accepts but never answers: the pool gives up after its connect timeout', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });
    const db = openPostgres({ url: urlWithPort((silent.address() as AddressInfo).port), connectTimeoutMs: 300 });
    cleanups.push(() => db.close());
    const started = Date.now();
    const err = await db.query('select 1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseUnavailableError);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('SQLSTATEs of a server that cannot serve now, and not those about the statement', () => {
    for (const code of ['08006', '08001', '08P01', '57P01', '57P02', '57P03', '53300']) {
      expect(toDatabaseError({ code, message: 'from the server' }), code).toBeInstanceOf(DatabaseUnavailableError);
      expect(toDatabaseError({ code, message: 'x' })).toMatchObject({ sqlState: code });
    }
    for (const code of ['23505', '42P01', '40001', '22003', '53100']) {
      const err = toDatabaseError({ code, message: 'from the server' });
      expect(err, code).toBeInstanceOf(DatabaseError);
      expect(err, code).not.toBeInstanceOf(DatabaseUnavailableError);
      expect(isDatabaseUnavailable(err)).toBe(false);
    }
    expect(isDatabaseUnavailable(new Error('something else'))).toBe(false);
    const several = Object.assign(new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' })], ''), {});
    expect(toDatabaseError(several)).toBeInstanceOf(DatabaseUnavailableError);
  });
});

describe.skipIf(!backend)('a real server going away under a connection', () => {
  it('a session whose backend is ended (57P01) fails its next statement as unavailable, and the process goes on', async () => {
    const direct = await backend!.db();
    const db = openPostgres({ url: DATABASE_URL! });
    cleanups.push(() => db.close());
    const session = await db.connect();
    cleanups.push(() => session.release());
    const { rows } = await session.query<{ pid: number }>('select pg_backend_pid() as pid');
    // The connection is idle and checked out: its client emits `error`, which nothing but rastro hears.
    await direct.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(session.lost).toBe(true);
    const err = await session.query('select 1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseUnavailableError);
    // The pool is fine: a broken connection is not handed out again.
    expect((await db.query<{ one: number }>('select 1 as one')).rows).toEqual([{ one: 1 }]);
  });

  it('a role without a connection slot left (53300)', async () => {
    const direct = await backend!.db();
    const role = `t_full_${randomBytes(4).toString('hex')}`;
    await direct.query(`create role ${role} login connection limit 0`);
    cleanups.push(() => direct.query(`drop role if exists ${role}`));
    const url = new URL(DATABASE_URL!);
    url.username = role;
    const db = openPostgres({ url: url.toString() });
    cleanups.push(() => db.close());
    const err = await db.query('select 1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseUnavailableError);
    expect(err).toMatchObject({ sqlState: '53300' });
  });

  it('a statement the server refuses (division by zero) stays a statement error', async () => {
    const direct = await backend!.db();
    const err = await direct.query(`select * from (values (1)) v(x) where (select 1/0) = 1`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseError);
    expect(isDatabaseUnavailable(err)).toBe(false);
  });
});
