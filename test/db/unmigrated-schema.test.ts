import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { onTestFinished, describe, expect, it } from 'vitest';
import { RASTRO_TABLES } from '../../packages/rastro/src/db/database-error.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, schemaName } from '../support/databases.js';

const MIGRATIONS = join(import.meta.dirname, '../../packages/rastro/migrations');

describe.each(backends())('a schema that was never migrated, on $name', (backend) => {
  it('refuses an append with RASTRO_NOT_MIGRATED, saying to run rastro migrate, without the statement', async () => {
    const db = await backend.db();
    const schema = schemaName();
    const store = createEventStore(db, { schema });
    const append = store.append('order-1', [{ type: 'order.paid', data: { cents: 100 } }]);
    await expect(append).rejects.toMatchObject({ code: 'RASTRO_NOT_MIGRATED', sqlState: '42P01', schema });
    const err = (await append.catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(new RegExp(`^relation "${schema}\\.\\w+" does not exist: schema ${schema} does not have rastro's tables; migrate it first \\(\`rastro migrate\`, or \`migrate\\(db, \\{ schema: '${schema}' \\}\\)\` in the library\\)$`));
  });

  it('says the same when the schema exists but holds none of rastro\'s tables', async () => {
    const db = await backend.db();
    const schema = schemaName();
    await db.query(`create schema "${schema}"`);
    onTestFinished(async () => void (await db.query(`drop schema if exists "${schema}" cascade`)));
    await expect(createEventStore(db, { schema }).readStream('order-1')).rejects.toMatchObject({ code: 'RASTRO_NOT_MIGRATED', schema });
  });

  it("leaves a missing table that is not rastro's a plain database error", async () => {
    const db = await backend.db();
    await expect(db.query(`select 1 from ${schemaName()}.invoices`)).rejects.toMatchObject({ code: 'RASTRO_DATABASE', sqlState: '42P01' });
  });
});

describe('the tables a missing one of which means an unmigrated schema', () => {
  it('are every table the migrations create', async () => {
    const created = new Set<string>();
    for (const file of (await readdir(MIGRATIONS)).filter((name) => name.endsWith('.sql'))) {
      for (const match of (await readFile(join(MIGRATIONS, file), 'utf8')).matchAll(/create table (?:if not exists )?(?:\$\{?\w+\}?\.)?(\w+)/gi)) created.add(match[1]!);
    }
    expect(created.size).toBeGreaterThan(10);
    expect([...created].filter((table) => !RASTRO_TABLES.has(table))).toEqual([]);
  });
});
