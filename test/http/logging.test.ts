import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startServer } from '../../packages/server/src/server.js';
import { backends } from '../support/databases.js';
import { testApp } from '../support/app.js';

function captureLogs() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: { level: 'info', stream } };
}

describe.each(backends())('logs and server faults on $name', (backend) => {
  it('logs each request with its request id, never its body or Authorization header', async () => {
    const { lines, logger } = captureLogs();
    const t = await testApp(backend, { logger, apiKey: 'key-that-must-not-leak' });
    const res = await t.post('/accounts', { owner: 'Secret Owner Name' }, { authorization: 'Bearer key-that-must-not-leak', 'x-request-id': 'req-42' });
    expect(res.statusCode).toBe(201);
    const text = JSON.stringify(lines);
    expect(lines.filter((line) => line.reqId === 'req-42').length).toBeGreaterThanOrEqual(2);
    expect(text).not.toContain('Secret Owner Name');
    expect(text).not.toContain('key-that-must-not-leak');
  });

  it('answers a server fault with a bare 500 problem: no SQL, no stack, no internal message', async () => {
    const { lines, logger } = captureLogs();
    // Nothing remembered: the balance is read from the snapshots table, which is gone.
    const t = await testApp(backend, { logger, accountCacheSize: 0 });
    const id = await t.openAccount();
    await t.db.query(`drop table "${t.schema}".snapshots`);
    const res = await t.get(`/accounts/${id}/balance`);
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'the server could not complete the request; it has been logged',
      instance: `/accounts/${id}/balance`,
    });
    const logged = JSON.stringify(lines.filter((line) => line.msg === 'request failed'));
    expect(logged).toContain('RASTRO_NOT_MIGRATED');
    expect(logged).not.toMatch(/select|stack/i);
  });
});

describe('starting the server', () => {
  it('refuses a non-loopback host without an API key', async () => {
    await expect(startServer({ host: '0.0.0.0', port: 0, dataDir: 'memory://' })).rejects.toMatchObject({ code: 'RASTRO_CONFIG' });
  });
});
