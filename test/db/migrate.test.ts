import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import { MIGRATIONS_DIR, migrate } from '../../packages/rastro/src/db/migrate.js';
import { ConfigError, MigrationError } from '../../packages/rastro/src/errors.js';
import { backends, DATABASE_URL, postgresBackend, schemaName } from '../support/databases.js';

const run = promisify(execFile);

async function copyOfMigrations(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'rastro-migrations-'));
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

describe.each(backends())('migrations on $name', (backend) => {
  it('applies every file once and records it with a checksum', async () => {
    const db = await backend.db();
    const schema = schemaName();
    onTestFinished(() => db.query(`drop schema "${schema}" cascade`).then(() => undefined));
    const files = (await readdir(MIGRATIONS_DIR)).filter((name) => name.endsWith('.sql'));
    expect(await migrate(db, { schema })).toEqual(files);
    expect(await migrate(db, { schema })).toEqual([]);
    const { rows } = await db.query<{ name: string; checksum: string }>(`select name, checksum from "${schema}".migrations order by id`);
    expect(rows.map((row) => row.name)).toEqual(files);
    expect(rows.every((row) => /^[0-9a-f]{64}$/.test(row.checksum))).toBe(true);
  });

  it('refuses to start when an applied file changed', async () => {
    const db = await backend.db();
    const schema = schemaName();
    onTestFinished(() => db.query(`drop schema "${schema}" cascade`).then(() => undefined));
    const directory = await copyOfMigrations();
    await migrate(db, { schema, directory });
    await appendFile(join(directory, '0001_event_store.sql'), '\n-- edited after the fact\n');
    const err = await migrate(db, { schema, directory }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationError);
    expect((err as Error).message).toContain('0001_event_store.sql changed after it was applied');
  });

  it('refuses a database that has migrations this code does not know', async () => {
    const db = await backend.db();
    const schema = schemaName();
    onTestFinished(() => db.query(`drop schema "${schema}" cascade`).then(() => undefined));
    const directory = await copyOfMigrations();
    await writeFile(join(directory, '9999_from_the_future.sql'), 'create table future (id int);');
    await migrate(db, { schema, directory });
    await expect(migrate(db, { schema })).rejects.toThrow(/9999_from_the_future.sql, which this version of rastro does not know/);
  });

  it('rolls back a failing file entirely and records nothing for it', async () => {
    const db = await backend.db();
    const schema = schemaName();
    onTestFinished(() => db.query(`drop schema "${schema}" cascade`).then(() => undefined));
    const directory = await copyOfMigrations();
    await writeFile(join(directory, '0900_broken.sql'), 'create table half_done (id int);\nselect 1/0;');
    await expect(migrate(db, { schema, directory })).rejects.toMatchObject({ code: 'RASTRO_DATABASE', sqlState: '22012' });
    const { rows } = await db.query<{ n: number }>(
      `select (select count(*)::int from "${schema}".migrations where id = 900) + (select count(*)::int from pg_tables where schemaname = $1 and tablename = 'half_done') as n`,
      [schema],
    );
    expect(rows[0]!.n).toBe(0);
  });

  it('rejects a schema name that is not a plain identifier', async () => {
    const db = await backend.db();
    for (const schema of ['', 'Rastro', 'a-b', 'x"; drop table y; --', 'pg_catalog', 'a'.repeat(41)]) {
      await expect(migrate(db, { schema })).rejects.toBeInstanceOf(ConfigError);
    }
  });
});

describe.skipIf(!postgresBackend())('the migration race on real PostgreSQL', () => {
  it('lets four processes migrate a fresh schema at once: all succeed, each file applied once', async () => {
    const schema = schemaName();
    const cli = join(import.meta.dirname, '../../packages/server/dist/cli/main.js');
    const env = { ...process.env, DATABASE_URL, RASTRO_SCHEMA: schema };
    const results = await Promise.allSettled(Array.from({ length: 4 }, () => run(process.execPath, [cli, 'migrate'], { env })));
    const db = await postgresBackend()!.db();
    onTestFinished(() => db.query(`drop schema "${schema}" cascade`).then(() => undefined));
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    const { rows } = await db.query<{ id: number; n: number }>(`select id, count(*)::int as n from "${schema}".migrations group by id`);
    const files = (await readdir(MIGRATIONS_DIR)).filter((name) => name.endsWith('.sql'));
    expect(rows).toHaveLength(files.length);
    expect(rows.every((row) => row.n === 1)).toBe(true);
  });
});
