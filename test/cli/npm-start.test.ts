import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';

const ROOT = join(import.meta.dirname, '..', '..');
const webhook = { orderId: '260074525', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z', customer: { name: 'C' } };

/**
 * `npm start` in a fresh clone of the repository, as a new user runs it: the committed files, the
 * installed node_modules and the dist/ already built (so prestart finds nothing to rebuild), an
 * embedded database in a folder of its own, no network.
 */
describe('npm start in a fresh clone', () => {
  let clone: string;
  beforeAll(() => {
    clone = mkdtempSync(join(tmpdir(), 'rastro-clone-'));
    execFileSync('git', ['clone', '--quiet', '--local', '--no-hardlinks', ROOT, join(clone, 'rastro')]);
    symlinkSync(join(ROOT, 'node_modules'), join(clone, 'rastro', 'node_modules'));
    for (const pkg of ['packages/rastro', 'packages/server']) cpSync(join(ROOT, pkg, 'dist'), join(clone, 'rastro', pkg, 'dist'), { recursive: true });
  });
  afterAll(() => rmSync(clone, { recursive: true, force: true }));

  it('prints the console\'s address, leads / to it, and normalizes a webhook snapshot into an order', async () => {
    const child = spawn('npm', ['start', '--silent'], {
      cwd: join(clone, 'rastro'),
      env: { ...process.env, DATABASE_URL: '', PORT: '0', RASTRO_DATA_DIR: join(clone, 'data'), RASTRO_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const consoleUrl = await eventually(() => /operations console: (http:\/\/127\.0\.0\.1:\d+\/console\/)/.exec(output)?.[1], 'npm start to print the console address', 50_000);
      expect(output).not.toContain('tsc');
      const base = consoleUrl.replace(/\/console\/$/, '');
      const root = await fetch(`${base}/`, { redirect: 'manual' });
      expect(root.status).toBe(302);
      expect(root.headers.get('location')).toBe('/console/');
      expect((await fetch(consoleUrl)).status).toBe(200);

      const posted = await fetch(`${base}/intake/pied/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(webhook) });
      expect(posted.status).toBeLessThan(300);
      const order = await eventually(async () => {
        const body = (await (await fetch(`${base}/orders/pied:260074525`)).json()) as { state: unknown };
        return body.state !== null && body;
      }, 'the normalizer serve runs to normalize the snapshot');
      expect(order).toMatchObject({ state: { status: 'received', lifecycle: 'captured' } });
    } finally {
      // npm runs node under a shell: the whole group goes.
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
  }, 90_000);
});
