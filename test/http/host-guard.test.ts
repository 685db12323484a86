import { Writable } from 'node:stream';
import { describe, expect, it, onTestFinished } from 'vitest';
import { testApp } from '../support/app.js';
import { backends } from '../support/databases.js';
import { rawRequest } from '../support/raw-http.js';

const [pglite] = backends();
const json = { 'content-type': 'application/json' };

describe('a server without an API key answers only to the loopback', () => {
  it('refuses a forged Host, as a DNS-rebinding page would send it, on reads and writes, and writes nothing', async () => {
    const t = await testApp(pglite!);
    const before = await t.rowCounts();
    for (const host of ['evil.example', 'evil.example:3000', '127.0.0.1.evil.example', 'localhost.evil.example:3000']) {
      const writes = [
        await t.app.inject({ method: 'POST', url: '/accounts', headers: { ...json, host, origin: `http://${host}` }, payload: '{"owner":"Ana"}' }),
        await t.app.inject({ method: 'POST', url: '/ops/replays', headers: { ...json, host, origin: `http://${host}` }, payload: '{"processor":"p","simulate":false}' }),
        await t.app.inject({ method: 'GET', url: '/ops/runs', headers: { host } }),
      ];
      for (const res of writes) {
        expect(res.statusCode, `${host}: ${res.body}`).toBe(403);
        expect(res.headers['content-type']).toContain('application/problem+json');
        expect(res.json()).toMatchObject({ code: 'RASTRO_HOST_NOT_ALLOWED' });
      }
    }
    expect(await t.rowCounts()).toEqual(before);
  });

  it('serves the loopback names with any port, and the hosts of RASTRO_ALLOWED_HOSTS', async () => {
    const t = await testApp(pglite!, { allowedHosts: ['rastro.internal', 'ops.example:8443'] });
    for (const host of ['localhost', 'localhost:3000', 'LocalHost:3000', '127.0.0.1:3000', '[::1]:3000', 'rastro.internal', 'rastro.internal:3000', 'ops.example:8443']) {
      const res = await t.app.inject({ method: 'POST', url: '/accounts', headers: { ...json, host }, payload: '{"owner":"Ana"}' });
      expect(res.statusCode, host).toBe(201);
    }
    expect((await t.app.inject({ method: 'GET', url: '/healthz', headers: { host: 'other.example' } })).statusCode).toBe(403);
  });

  it('refuses a state-changing request whose Origin is another site, and accepts its own origin', async () => {
    const t = await testApp(pglite!);
    const post = (origin: string | undefined) =>
      t.app.inject({ method: 'POST', url: '/accounts', headers: { ...json, host: '127.0.0.1:3000', ...(origin === undefined ? {} : { origin }) }, payload: '{"owner":"Ana"}' });
    for (const origin of ['http://evil.example', 'null', 'http://127.0.0.1:4000', 'https://127.0.0.1:3000.evil.example', 'file://']) {
      const res = await post(origin);
      expect(res.statusCode, origin).toBe(403);
      expect(res.json()).toMatchObject({ code: 'RASTRO_ORIGIN_NOT_ALLOWED' });
    }
    expect(await t.eventCount()).toBe(0);
    expect((await post('http://127.0.0.1:3000')).statusCode).toBe(201);
    expect((await post(undefined)).statusCode).toBe(201); // curl and scripts send no Origin
    const read = await t.app.inject({ method: 'GET', url: '/healthz', headers: { host: 'localhost:3000', origin: 'http://evil.example' } });
    expect(read.statusCode).toBe(200);
  });

  it('refuses a forged Host on a real socket', async () => {
    const t = await testApp(pglite!);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    onTestFinished(() => t.app.close());
    const port = (t.app.server.address() as { port: number }).port;
    const body = '{"owner":"Ana"}';
    const forged = await rawRequest(port, `POST /accounts HTTP/1.1\r\nHost: rebound.evil.example:${port}\r\nOrigin: http://rebound.evil.example:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    expect(forged.status).toBe(403);
    const own = await rawRequest(port, `POST /accounts HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nOrigin: http://127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    expect(own.status).toBe(201);
  });

  it('applies no Host rule when a key is configured: the key is the guard', async () => {
    const t = await testApp(pglite!, { apiKey: 'k-123' });
    const res = await t.app.inject({ method: 'GET', url: '/ops/runs', headers: { host: 'rastro.example.com', authorization: 'Bearer k-123' } });
    expect(res.statusCode).toBe(200);
  });
});

describe('logged URLs', () => {
  it('never hold an API key sent in the query string', async () => {
    const lines: string[] = [];
    const stream = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) });
    const t = await testApp(pglite!, { apiKey: 'k-secret-777', logger: { level: 'info', stream } });
    const res = await t.app.inject({ method: 'GET', url: '/ops/runs?api_key=k-secret-777&limit=5&token=k-secret-777' });
    expect(res.statusCode).toBe(401);
    const text = lines.join('');
    expect(text).toContain('/ops/runs?api_key=[redacted]&limit=5&token=[redacted]');
    expect(text).not.toContain('k-secret-777');
  });
});
