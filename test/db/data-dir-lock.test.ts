import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../packages/rastro/src/db/open-database.js';
import { DatabaseInUseError } from '../../packages/rastro/src/errors.js';

const DIST_OPEN = pathToFileURL(join(import.meta.dirname, '..', '..', 'packages', 'rastro', 'dist', 'db', 'open-database.js')).href;

/** Another process with the folder open, as a running `rastro serve` has it. */
async function holder(folder: string) {
  const script = `const { openDatabase } = await import(${JSON.stringify(DIST_OPEN)});
const db = await openDatabase({ url: ${JSON.stringify(folder)} });
await db.query('create table if not exists kept (n int)');
await db.query('insert into kept values (42)');
process.stdout.write('open\\n');
setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('open') && resolve());
    child.once('exit', (code) => reject(new Error(`the holder exited (${code})`)));
  });
  return child;
}

describe('an embedded database folder, open in one process at a time', () => {
  it('refuses a second process while the first lives, and takes over after it was killed', async () => {
    const folder = join(await mkdtemp(join(tmpdir(), 'rastro-lock-')), 'pg');
    const child = await holder(folder);
    try {
      const refused = await openDatabase({ url: folder }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(DatabaseInUseError);
      expect(refused).toMatchObject({ code: 'RASTRO_DATABASE_IN_USE', pid: child.pid });
      expect((refused as Error).message).toContain(`is open in process ${child.pid}`);
    } finally {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    // Its lock outlives it; its process is gone, so the folder opens, with what it wrote.
    expect(existsSync(`${folder}.lock`)).toBe(true);
    const db = await openDatabase({ url: folder });
    try {
      expect((await db.query<{ n: number }>('select n from kept')).rows).toEqual([{ n: 42 }]);
    } finally {
      await db.close();
    }
    expect(existsSync(`${folder}.lock`)).toBe(false);
  }, 60_000);
});
