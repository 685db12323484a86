import { execFile, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../packages/rastro/src/db/migrate.js';
import { openDatabase } from '../../packages/rastro/src/db/open-database.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../packages/server/dist/cli/main.js');
let dataDir: string;
const env = () => ({ ...process.env, DATABASE_URL: '', RASTRO_BROKER_URL: '', RASTRO_DATA_DIR: dataDir });
const rastro = (args: string[]) => run(process.execPath, [CLI, ...args], { env: env() });

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'rastro-outbox-cli-'));
  const db = await openDatabase({ url: join(dataDir, 'pg') });
  await migrate(db);
  const outbox = createOutbox(db);
  for (let n = 1; n <= 3; n++) await db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId: 'o1', type: 'OrderChanged', payload: { n } }));
  await db.close();
});

describe('the outbox commands on the embedded database', () => {
  it('relays until stopped, then reports status, parked messages and cleanup', async () => {
    expect((await rastro(['outbox', 'status'])).stdout).toContain('no relay has run yet');
    const relay = spawn(process.execPath, [CLI, 'relay'], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    relay.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    for (let i = 0; i < 400 && !stdout.includes('publishing to'); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(stdout).toContain('relay relay:outbox publishing to the in-process publisher');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    relay.kill('SIGTERM');
    expect(await new Promise((resolve) => relay.on('exit', resolve))).toBe(0);
    expect(stdout).toContain('relay stopped: published 3');

    const status = JSON.parse((await rastro(['outbox', 'status', '--json'])).stdout) as { name: string; pending: number; counters: Record<string, number> }[];
    expect(status).toMatchObject([{ name: 'outbox', pending: 0, counters: { published: 3 } }]);
    expect((await rastro(['outbox', 'parked', 'list'])).stdout).toContain('no parked messages');
    await expect(rastro(['outbox', 'parked', 'retry', 'not-an-id'])).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('messageId: must be the id of a parked message') });
    expect((await rastro(['outbox', 'cleanup', '--days', '0'])).stdout).toContain('published messages older than 0 days deleted: 3');
    await expect(rastro(['outbox', 'cleanup', '--days', 'soon'])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--days must be a whole number') });
    await expect(rastro(['outbox', 'frobnicate'])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('usage: rastro outbox status') });
  });
});
