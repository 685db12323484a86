import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';

const CLI = join(import.meta.dirname, '../../dist/cli/main.js');

/** Starts `rastro serve` as a real process on the embedded database and returns its URL. */
async function serve(dataDir: string): Promise<string> {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, DATABASE_URL: '', RASTRO_DATA_DIR: dataDir, PORT: '0', RASTRO_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    child.kill('SIGTERM');
  });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
  });
}

describe('rastro serve on the embedded database', () => {
  it('migrates, prints its URL, answers /healthz and reports unknown routes as problems', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'rastro-serve-'));
    const url = await serve(dataDir);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', database: 'pglite', readerDelay: { heldBack: 0 } });
    const missing = await fetch(`${url}/no-such-route`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
    expect(await missing.json()).toMatchObject({ status: 404, title: 'Not Found', instance: '/no-such-route' });
  });

  it('refuses an unknown command with usage and exit code 2', async () => {
    const child = spawn(process.execPath, [CLI, 'frobnicate'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('unknown command frobnicate');
    expect(stderr).toContain('usage: rastro');
  });
});
