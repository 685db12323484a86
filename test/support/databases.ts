import { randomBytes } from 'node:crypto';
import { afterAll, onTestFinished } from 'vitest';
import type { Database } from '../../packages/rastro/src/db/database.js';
import { migrate } from '../../packages/rastro/src/db/migrate.js';
import { openDatabase } from '../../packages/rastro/src/db/open-database.js';

export const DATABASE_URL = process.env.DATABASE_URL;

export interface Backend {
  name: 'pglite' | 'postgres';
  /** The backend's database, opened once per test file. */
  db(): Promise<Database>;
}

function sharedBackend(name: Backend['name'], url: string): Backend {
  let opened: Promise<Database> | undefined;
  afterAll(async () => {
    await (await opened)?.close();
  });
  return {
    name,
    // RASTRO_TEST_POOL_SIZE lowers it where several test runs share one server's connections.
    db: () => (opened ??= openDatabase({ url, poolSize: Number(process.env.RASTRO_TEST_POOL_SIZE ?? 20) })),
  };
}

/**
 * The databases a test file runs against: PGlite always, real PostgreSQL when DATABASE_URL is
 * set. Use with `describe.each(backends())`.
 */
export function backends(): Backend[] {
  const list = [sharedBackend('pglite', 'memory://')];
  if (DATABASE_URL) list.push(sharedBackend('postgres', DATABASE_URL));
  return list;
}

export function postgresBackend(): Backend | undefined {
  return DATABASE_URL ? sharedBackend('postgres', DATABASE_URL) : undefined;
}

/** A new schema name, so every test has its own tables. */
export function schemaName(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

/** A fresh, migrated schema in the backend's database, for one test; dropped when it ends. */
export async function freshSchema(backend: Backend): Promise<{ db: Database; schema: string }> {
  const db = await backend.db();
  const schema = schemaName();
  await migrate(db, { schema });
  onTestFinished(async () => {
    await db.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
  });
  return { db, schema };
}
