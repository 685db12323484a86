import { ConfigError } from '../errors.js';
import type { Database } from './database.js';
import { isPgPool } from './executor.js';
import { openPostgres, type PgPool } from './postgres.js';

export interface OpenDatabaseOptions {
  /**
   * A `postgres://` or `postgresql://` URL for a server; otherwise a PGlite data folder, or
   * `memory://` for a database that lives only in this process. Give a `url` or a `pool`.
   */
  url?: string;
  /**
   * The application's own `pg` `Pool`: rastro shares it instead of opening one, runs its
   * statements with its own type parsers passed per query (the pool's are left as they are),
   * and never ends it. LISTEN takes one connection of its own besides.
   */
  pool?: PgPool;
  /** @defaultValue 10 (a pool rastro opens) */
  poolSize?: number;
  onError?: (err: Error) => void;
}

/**
 * Opens the database an URL names (a PostgreSQL server through `pg`, or embedded PGlite), or
 * shares the application's own `pg` pool.
 *
 * @example
 * ```ts
 * const db = await openDatabase({ url: process.env.DATABASE_URL ?? './.rastro/db' })
 * const shared = await openDatabase({ pool: app.pool }) // close() leaves the pool open
 * ```
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  if (options.pool !== undefined) {
    if (!isPgPool(options.pool)) throw new ConfigError('pool must be a pg Pool (a client has one connection; rastro needs several: pass it as tx instead)');
    return openPostgres({ pool: options.pool, onError: options.onError });
  }
  if (typeof options.url !== 'string' || options.url.length === 0) throw new ConfigError('openDatabase needs a url (postgres://…, a folder, memory://) or a pg pool');
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
