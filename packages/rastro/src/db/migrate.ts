import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MigrationError } from '../errors.js';
import type { Database, Transaction } from './database.js';
import { quoteSchema } from './schema-name.js';

/** The package's own migrations folder, beside `src/` and `dist/`. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

export interface MigrationFile {
  id: number;
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateOptions {
  /** @defaultValue 'rastro' */
  schema?: string;
  /** @defaultValue the package's migrations folder */
  directory?: string;
}

const FILE_NAME = /^(\d{4})_[a-z0-9_]+\.sql$/;

export async function readMigrationFiles(directory = MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const names = (await readdir(directory)).filter((name) => FILE_NAME.test(name)).sort();
  const files: MigrationFile[] = [];
  for (const name of names) {
    const sql = (await readFile(join(directory, name), 'utf8')).replace(/\r\n/g, '\n');
    const id = Number(FILE_NAME.exec(name)?.[1]);
    if (files.some((file) => file.id === id)) throw new MigrationError(`two migration files are numbered ${id}`);
    files.push({ id, name, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return files;
}

interface AppliedRow {
  id: number;
  name: string;
  checksum: string;
}

function verifyApplied(applied: AppliedRow[], files: MigrationFile[]): void {
  for (const row of applied) {
    const file = files.find((candidate) => candidate.id === row.id);
    if (!file) {
      throw new MigrationError(`the database has migration ${row.name}, which this version of rastro does not know; run a newer version`);
    }
    if (file.checksum !== row.checksum) {
      throw new MigrationError(`migration ${row.name} changed after it was applied; restore the original file (add a new migration for new changes)`);
    }
  }
}

async function applyOne(tx: Transaction, schema: string, file: MigrationFile, files: MigrationFile[]): Promise<boolean> {
  const quoted = quoteSchema(schema);
  await tx.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`rastro.migrate.${schema}`]);
  await tx.exec(
    `create schema if not exists ${quoted};
     create table if not exists ${quoted}.migrations (
       id integer primary key,
       name text not null,
       checksum text not null,
       applied_at timestamptz not null default now()
     );`,
  );
  const { rows } = await tx.query<AppliedRow>(`select id, name, checksum from ${quoted}.migrations order by id`);
  verifyApplied(rows, files);
  if (rows.some((row) => row.id === file.id)) return false;
  await tx.exec(`set local search_path to ${quoted};\n${file.sql}`);
  await tx.query(`insert into ${quoted}.migrations (id, name, checksum) values ($1, $2, $3)`, [file.id, file.name, file.checksum]);
  return true;
}

/**
 * Applies the numbered `.sql` files in order, each in its own transaction under an advisory
 * lock, and records each with a checksum. Safe to run from several processes at once. Refuses
 * to go on when an applied file changed or the database is ahead of the code.
 *
 * @returns the names of the files applied by this call
 * @example
 * ```ts
 * await migrate(db, { schema: 'rastro' })
 * ```
 */
export async function migrate(db: Database, options: MigrateOptions = {}): Promise<string[]> {
  const schema = options.schema ?? 'rastro';
  quoteSchema(schema);
  const files = await readMigrationFiles(options.directory);
  const applied: string[] = [];
  for (const file of files) {
    if (await db.transaction((tx) => applyOne(tx, schema, file, files))) applied.push(file.name);
  }
  return applied;
}
