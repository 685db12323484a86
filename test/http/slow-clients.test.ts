import { connect, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { testApp } from '../support/app.js';
import { backends } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

const [pglite] = backends();

interface Trickler {
  socket: Socket;
  received: string;
  closed: boolean;
}

/** A client that sends `head`, then one byte of `rest` every 200 ms, for as long as the server lets it. */
function trickle(port: number, head: string, rest: string): Trickler {
  const socket = connect(port, '127.0.0.1');
  const client: Trickler = { socket, received: '', closed: false };
  let at = 0;
  const timer = setInterval(() => {
    if (at < rest.length && socket.writable) socket.write(rest[at++]!);
  }, 200);
  socket.on('data', (chunk) => (client.received += chunk.toString()));
  socket.on('error', () => undefined);
  socket.on('close', () => {
    clearInterval(timer);
    client.closed = true;
  });
  socket.write(head);
  return client;
}

describe('slow clients', () => {
  it('cuts off clients that trickle their headers or body with a 408, while others are served', async () => {
    const t = await testApp(pglite!, { timeouts: { headersMs: 1_000, requestMs: 2_000, keepAliveMs: 1_000 } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as { port: number }).port;
    const clients: Trickler[] = [];
    onTestFinished(async () => {
      for (const client of clients) client.socket.destroy();
      await t.app.close();
    });
    const body = '{"owner":"' + 'a'.repeat(80) + '"}';
    for (let i = 0; i < 200; i++) {
      clients.push(trickle(port, `POST /accounts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body));
    }
    for (let i = 0; i < 100; i++) clients.push(trickle(port, 'GET /healthz HTTP/1.1\r\n', 'Host: localhost\r\nX-Slow: ' + 'b'.repeat(200) + '\r\n\r\n'));

    // With 300 slow sockets open, other clients are still served.
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(res.status).toBe(200);
    }
    await eventually(() => clients.every((client) => client.closed), 'the server to close every slow socket', 30_000);
    const answered = clients.filter((client) => client.received.startsWith('HTTP/1.1 408'));
    expect(answered.length).toBeGreaterThan(250);
    expect(answered[0]!.received).toContain('application/problem+json');
    expect(await t.eventCount()).toBe(0);
    // And the server still serves after them.
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });

  it('closes an idle keep-alive connection', async () => {
    const t = await testApp(pglite!, { timeouts: { headersMs: 1_000, requestMs: 2_000, keepAliveMs: 500 } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    onTestFinished(() => t.app.close());
    const port = (t.app.server.address() as { port: number }).port;
    const client = trickle(port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n', '');
    await eventually(() => client.closed, 'the server to close the idle connection', 10_000);
    expect(client.received).toMatch(/^HTTP\/1\.1 200/);
    expect(client.received).toMatch(/connection: keep-alive/i);
  });
});
