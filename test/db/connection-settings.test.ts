import { describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
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
});
