import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Database } from '../../packages/rastro/src/db/database.js';

const CLI = join(import.meta.dirname, '../../packages/server/dist/cli/main.js');

/** `rastro relay` in a process of its own, against real PostgreSQL and a real broker. */
export interface RelayProcess {
  child: ChildProcess;
  /** Resolves when it printed that it is publishing. */
  started: Promise<void>;
  exited: Promise<number | null>;
  /** The application_name of its database connections. */
  app: string;
}

export function spawnRelay(options: { databaseUrl: string; schema: string; name: string; env: Record<string, string>; app: string }): RelayProcess {
  const url = `${options.databaseUrl}${options.databaseUrl.includes('?') ? '&' : '?'}application_name=${options.app}`;
  const child = spawn(process.execPath, [CLI, 'relay', '--name', options.name], {
    env: { ...process.env, DATABASE_URL: url, RASTRO_SCHEMA: options.schema, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const started = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('publishing to')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`relay exited (${code}) before starting: ${output.slice(-500)}`)));
  });
  started.catch(() => undefined);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, started, exited, app: options.app };
}

/** Waits until the server has ended every connection of a killed process: its locks are free then. */
export async function connectionsGone(db: Database, app: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await db.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where application_name = $1', [app]);
    if (rows[0]!.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`connections of ${app} still open`);
}
