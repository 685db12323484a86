import type { Database } from '../../packages/rastro/src/db/database.js';
import { openDatabase } from '../../packages/rastro/src/db/open-database.js';
import { startTcpProxy } from './brokers.js';

export interface ProxiedDatabase {
  /** DATABASE_URL with the proxy's port: what a process under test connects to. */
  url: string;
  /** Drops every connection through the proxy and refuses new ones (the server itself runs on). */
  cut(): Promise<void>;
  restore(): Promise<void>;
  /** Opens a database through the proxy; closed by `close()`. */
  open(options?: { poolSize?: number }): Promise<Database>;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of the real PostgreSQL server of `databaseUrl`, for outages: cutting it
 * is, to rastro, the database going away, while the test keeps its own direct connection.
 */
export async function proxiedDatabase(databaseUrl: string, appName?: string): Promise<ProxiedDatabase> {
  const target = new URL(databaseUrl);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  if (appName) url.searchParams.set('application_name', appName);
  const opened: Database[] = [];
  // Cutting twice would wait for a listener that is already closed.
  let cut = false;
  return {
    url: url.toString(),
    async cut() {
      if (!cut) await proxy.cut();
      cut = true;
    },
    async restore() {
      if (cut) await proxy.restore();
      cut = false;
    },
    async open(options = {}) {
      const db = await openDatabase({ url: url.toString(), poolSize: options.poolSize ?? 10 });
      opened.push(db);
      return db;
    },
    async close() {
      for (const db of opened.splice(0)) await db.close().catch(() => undefined);
      if (!cut) await proxy.close();
      cut = true;
    },
  };
}
