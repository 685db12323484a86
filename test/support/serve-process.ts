import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const CLI = join(import.meta.dirname, '../../packages/server/dist/cli/main.js');

/** `rastro serve` in a process of its own (the built CLI), listening on a free port. */
export interface ServeProcess {
  child: ChildProcess;
  /** Resolves with the base URL once it printed that it listens; rejects if it exits first. */
  url: Promise<string>;
  exited: Promise<number | null>;
  /** The application_name of its database connections (see `connectionsGone`). */
  app: string;
  /** The last of what it printed, for failure messages. */
  output(): string;
}

export function spawnServe(options: { databaseUrl: string; schema: string; app: string; env: Record<string, string> }): ServeProcess {
  const url = `${options.databaseUrl}${options.databaseUrl.includes('?') ? '&' : '?'}application_name=${options.app}`;
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: url, RASTRO_SCHEMA: options.schema, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      keep(chunk);
      const found = /rastro listening on (http:\/\/\S+)/.exec(output);
      if (found) resolve(found[1]!);
    });
    child.stderr!.on('data', keep);
    child.once('exit', (code, signal) => reject(new Error(`serve exited (${code ?? signal}) before listening: ${output.slice(-800)}`)));
  });
  listening.catch(() => undefined);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, url: listening, exited, app: options.app, output: () => output };
}
