import type { Database } from './database.js';
import { openPglite } from './pglite.js';
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
  return openPglite(options.url);
}
