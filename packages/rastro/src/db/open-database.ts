import { ConfigError } from '../errors.js';
import type { Database } from './database.js';
import { openPostgres } from './postgres.js';

export interface OpenDatabaseOptions {
  /**
   * A `postgres://` or `postgresql://` URL for a server; otherwise a PGlite data folder, or
   * `memory://` for a database that lives only in this process.
   */
  url: string;
  /** @defaultValue 10 (server only) */
  poolSize?: number;
  onError?: (err: Error) => void;
}

/**
 * Opens the database an URL names: a PostgreSQL server through `pg`, or embedded PGlite.
 *
 * @example
 * ```ts
 * const db = await openDatabase({ url: process.env.DATABASE_URL ?? './.rastro/db' })
 * ```
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  if (/^postgres(ql)?:\/\//.test(options.url)) return openPostgres(options);
  // The embedded database is an optional dependency of the library: loaded only when asked for.
  const pglite = await import('./pglite.js').catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') {
      throw new ConfigError(`an embedded database (${options.url}) needs @electric-sql/pglite: npm install @electric-sql/pglite, or use a postgres:// URL`);
    }
    throw err;
  });
  return pglite.openPglite(options.url);
}
