import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';

const CLI = join(import.meta.dirname, '../../packages/server/dist/cli/main.js');

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
  it('migrates, prints its URL, answers /healthz and /readyz and reports unknown routes as problems', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'rastro-serve-'));
    const url = await serve(dataDir);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', database: 'pglite' });
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', checks: { database: { status: 'ok', readerDelay: { heldBack: 0 } }, migrations: { status: 'ok' } } });
    const missing = await fetch(`${url}/no-such-route`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
    expect(await missing.json()).toMatchObject({ status: 404, title: 'Not Found', instance: '/no-such-route' });
  });

  it('refuses an unknown command or option, naming it, with exit code 2', async () => {
    const child = spawn(process.execPath, [CLI, 'frobnicate'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('unknown command frobnicate');
    expect(stderr).toContain('rastro --help');
    const option = spawn(process.execPath, [CLI, 'outbox', 'status', '--frobnicate'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let optionError = '';
    option.stderr.on('data', (chunk: Buffer) => (optionError += chunk.toString()));
    expect(await new Promise((resolve) => option.on('exit', resolve))).toBe(2);
    expect(optionError).toContain("Unknown option '--frobnicate'");
  });

  it('prints each command’s usage with --help and the version with --version, exit code 0', async () => {
    const run = async (args: string[]) => {
      const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      return { code: await new Promise((resolve) => child.on('exit', resolve)), stdout };
    };
    expect(await run(['--version'])).toEqual({ code: 0, stdout: '0.1.0\n' });
    for (const [args, text] of [[['relay', '--help'], 'usage: rastro relay'], [['outbox', 'parked', '--help'], 'rastro outbox parked retry'], [['consume', '-h'], 'usage: rastro consume']] as const) {
      const { code, stdout } = await run([...args]);
      expect(code).toBe(0);
      expect(stdout).toContain(text);
    }
  });
});
