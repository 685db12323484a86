import type { Queryable } from './database.js';
import { readMigrationFiles, type MigrationFile } from './migrate.js';
import { quoteSchema } from './schema-name.js';

/** How the migrations applied to a schema compare with the migration files. */
export interface MigrationStatus {
  /** True when every file is applied, unchanged, and the database has none the files lack. */
  current: boolean;
  /** Files not applied yet. */
  pending: string[];
  /** Applied migrations whose file is missing: the database is ahead of this code. */
  unknown: string[];
  /** Applied migrations whose file changed since. */
  changed: string[];
}

/**
 * Compares the applied migrations of `schema` with `files` (by default the package's own),
 * without changing anything: what a readiness check asks.
 *
 * @example
 * ```ts
 * const status = await migrationStatus(db, { schema: 'rastro' })
 * if (!status.current) console.log(status.pending)
 * ```
 */
export async function migrationStatus(db: Queryable, options: { schema?: string; files?: MigrationFile[] } = {}): Promise<MigrationStatus> {
  const schema = quoteSchema(options.schema ?? 'rastro');
  const files = options.files ?? (await readMigrationFiles());
  const { rows: found } = await db.query<{ found: boolean }>('select to_regclass($1) is not null as found', [`${schema}.migrations`]);
  const applied = found[0]?.found
    ? (await db.query<{ id: number; name: string; checksum: string }>(`select id, name, checksum from ${schema}.migrations order by id`)).rows
    : [];
  const byId = new Map(applied.map((row) => [row.id, row]));
  const pending = files.filter((file) => !byId.has(file.id)).map((file) => file.name);
  const unknown = applied.filter((row) => !files.some((file) => file.id === row.id)).map((row) => row.name);
  const changed = applied.filter((row) => files.some((file) => file.id === row.id && file.checksum !== row.checksum)).map((row) => row.name);
  return { current: pending.length + unknown.length + changed.length === 0, pending, unknown, changed };
}
