import { connect } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { testApp, type TestApp } from '../support/app.js';
import { backends } from '../support/databases.js';
import { rawRequest } from '../support/raw-http.js';

const [pglite] = backends();

describe('every client error is a problem document with its own status', () => {
  let t: TestApp;
  let port: number;
  /** The app on a real socket: these requests must not be normalized on their way in. */
  const serve = async () => {
    t = await testApp(pglite!);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
    onTestFinished(() => t.app.close());
  };

  const get = (path: string) => rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  const expectProblem = (res: { status: number; headers: Record<string, string>; body: string }, status: number) => {
    expect(res.status, res.body).toBe(status);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({ status });
    expect(res.body).not.toMatch(/node_modules|\/work\/| at /);
  };

  it('keeps the 4xx of the API page\'s static files for a traversal, in every encoding', async () => {
    await serve();
    for (const path of ['/docs/static/../../package.json', '/docs/static/%2e%2e/%2e%2e/package.json', '/docs/static/.%2e/.%2e/package.json', '/docs/static/..%2f..%2fpackage.json', '/docs/static/%2E%2E%5C%2E%2E%5Cpackage.json']) {
      const res = await get(path);
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.status, path).toBeLessThan(500);
      expect(res.headers['content-type'], path).toContain('application/problem+json');
      expect(res.body, path).not.toContain('"dependencies"');
    }
    expectProblem(await get('/docs/static/../../package.json'), 403);
  });

  it('answers framing errors with a 400 problem document and closes the connection', async () => {
    await serve();
    const clte = await rawRequest(port, 'POST /accounts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n0\r\n\r\n');
    expectProblem(clte, 400);
    expect(clte.headers.connection).toBe('close');
    expectProblem(await rawRequest(port, 'POST /accounts HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\nContent-Type: application/json\r\n\r\n'), 400);
    expectProblem(await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ' + 'a'.repeat(20_000) + '\r\n\r\n'), 431);
    expect(await t.eventCount()).toBe(0);
  });

  it('answers a readable 413 to a client still uploading a 5 MB body', async () => {
    await serve();
    const body = Buffer.alloc(5 * 1024 * 1024, 0x20);
    // Like many clients (curl among them), it reads the answer once its whole body is sent; a
    // server that closes the connection mid-upload makes its writes meet a reset, and the answer is lost.
    const answer = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.pause();
      socket.on('error', reject);
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: Number(text.slice(9, 12)), type: /content-type: ([^\r]*)/i.exec(text)?.[1] ?? '', body: text.split('\r\n\r\n')[1] ?? '' });
      });
      socket.write(`POST /accounts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      socket.write(body, () => socket.resume());
    });
    expect(answer.status).toBe(413);
    expect(answer.type).toContain('application/problem+json');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' });
    expect(await t.eventCount()).toBe(0);
  });

  it('answers 405 with Allow for a method a known path does not serve, 404 for an unknown path', async () => {
    t = await testApp(pglite!);
    const cases: [string, string, string][] = [
      ['DELETE', '/accounts', 'POST'],
      ['GET', '/accounts/a1/deposit', 'POST'],
      ['PUT', '/ops/runs/r-1', 'GET, HEAD'],
      ['DELETE', '/ops/runs/r-1/diff.csv', 'GET, HEAD'],
    ];
    for (const [method, url, allow] of cases) {
      const res = await t.app.inject({ method: method as 'GET', url });
      expect(res.statusCode, `${method} ${url}`).toBe(405);
      expect(res.headers.allow).toBe(allow);
      expect(res.headers['content-type']).toContain('application/problem+json');
    }
    const unknown = await t.app.inject({ method: 'GET', url: '/nowhere/at/all' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers.allow).toBeUndefined();
  });
});
