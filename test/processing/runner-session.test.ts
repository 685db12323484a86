import { afterEach, describe, expect, it } from 'vitest';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { openRunnerSession } from '../../packages/rastro/src/processing/runner-session.js';
import { processingSql } from '../../packages/rastro/src/processing/sql.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { proxiedDatabase } from '../support/database-proxy.js';

const backend = postgresBackend();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe.skipIf(!backend)('a runner session whose database goes away', () => {
  it('gives a lost connection back to the pool once, however often it is found lost before it renews', async () => {
    const { schema } = await freshSchema(backend!);
    const proxy = await proxiedDatabase(DATABASE_URL!);
    cleanups.push(() => proxy.close());
    const db = await proxy.open({ poolSize: 2 });
    const runner = await openRunnerSession(db, processingSql(quoteSchema(schema)));

    await proxy.cut();
    // Each renewal finds the session lost and cannot open the next one while the database is away.
    await expect(runner.renew()).rejects.toMatchObject({ code: 'RASTRO_DATABASE_UNAVAILABLE' });
    await expect(runner.renew()).rejects.toMatchObject({ code: 'RASTRO_DATABASE_UNAVAILABLE' });
    await expect(runner.close()).resolves.toBeUndefined();

    await proxy.restore();
    const again = await openRunnerSession(db, processingSql(quoteSchema(schema)));
    expect((await again.session.query<{ one: number }>('select 1 as one')).rows).toEqual([{ one: 1 }]);
    await again.close();
  });
});
