import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../packages/server/src/config.js';
import { openPostgres } from '../../packages/rastro/src/db/postgres.js';
import { openServices } from '../../packages/server/src/server.js';
import { DATABASE_URL } from '../support/databases.js';

describe.skipIf(!DATABASE_URL)('connections to a PostgreSQL server', () => {
  it('run with jit off, and let PGOPTIONS override it', async () => {
    const db = openPostgres({ url: DATABASE_URL!, poolSize: 1 });
    try {
      expect((await db.query<{ jit: string }>('show jit')).rows).toEqual([{ jit: 'off' }]);
    } finally {
      await db.close();
    }
    const before = process.env.PGOPTIONS;
    process.env.PGOPTIONS = '-c jit=on';
    const overridden = openPostgres({ url: DATABASE_URL!, poolSize: 1 });
    try {
      expect((await overridden.query<{ jit: string }>('show jit')).rows).toEqual([{ jit: 'on' }]);
    } finally {
      if (before === undefined) delete process.env.PGOPTIONS;
      else process.env.PGOPTIONS = before;
      await overridden.close();
    }
  });

  it('open as many connections as RASTRO_POOL_SIZE says, and no more', async () => {
    const config = resolveConfig({ logLevel: 'silent' }, { DATABASE_URL, RASTRO_POOL_SIZE: '2', RASTRO_SCHEMA: `t_pool_${process.pid}` });
    expect(config.poolSize).toBe(2);
    const services = await openServices(config);
    try {
      const { rows } = await services.db.query<{ n: number }>('select 1 as n');
      expect(rows).toEqual([{ n: 1 }]);
      const pids = await Promise.all(Array.from({ length: 6 }, () => services.db.query<{ pid: number }>('select pg_backend_pid() as pid, pg_sleep(0.1)')));
      expect(new Set(pids.map((r) => r.rows[0]!.pid)).size).toBeLessThanOrEqual(2);
    } finally {
      await services.db.query(`drop schema if exists "t_pool_${process.pid}" cascade`).catch(() => undefined);
      await services.db.close();
    }
  });
});

describe('RASTRO_POOL_SIZE', () => {
  it('refuses a pool of no connection, naming the setting', () => {
    expect(() => resolveConfig({}, { RASTRO_POOL_SIZE: '0' })).toThrow(/RASTRO_POOL_SIZE must be an integer of at least 1/);
    expect(() => resolveConfig({}, { RASTRO_POOL_SIZE: 'many' })).toThrow(/RASTRO_POOL_SIZE/);
  });
});
