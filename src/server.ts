import { mkdir } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { resolveConfig, type RastroConfig, type RastroOptions } from './config.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open-database.js';
import { buildApp } from './http/app.js';
import { createEventStore, type EventStore } from './store/event-store.js';

export interface RunningServer {
  url: string;
  app: FastifyInstance;
  db: Database;
  store: EventStore;
  config: RastroConfig;
  close(): Promise<void>;
}

/** Opens the configured database (creating the PGlite folder if needed) and migrates it. */
export async function openMigratedDatabase(config: RastroConfig): Promise<{ db: Database; store: EventStore }> {
  if (config.embedded && config.databaseUrl !== 'memory://') await mkdir(config.databaseUrl, { recursive: true });
  const db = await openDatabase({ url: config.databaseUrl });
  try {
    await migrate(db, { schema: config.schema });
    const store = createEventStore(db, { schema: config.schema });
    await store.assertTransactionIdsCurrent();
    return { db, store };
  } catch (err) {
    await db.close();
    throw err;
  }
}

/**
 * `rastro serve`: migrates, then listens.
 *
 * @example
 * ```ts
 * const server = await startServer({ port: 0 })
 * console.log(server.url)
 * await server.close()
 * ```
 */
export async function startServer(options: RastroOptions = {}): Promise<RunningServer> {
  const config = resolveConfig(options);
  const { db, store } = await openMigratedDatabase(config);
  const app = await buildApp({ db, store, logger: config.logLevel === 'silent' ? false : { level: config.logLevel } });
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await app.close();
    await db.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    url: `http://${host}:${port}`,
    app,
    db,
    store,
    config,
    async close() {
      await app.close();
      await db.close();
    },
  };
}
