import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RETRY_AFTER_SECONDS } from './problem.js';

/** What answers on serve's port while it waits for its database at start-up. */
export interface StartingListener {
  /** The port it listens on: the configured one, or the one the system chose for port 0. */
  readonly port: number;
  /** Stops listening and ends every open connection, so the API can take the port. */
  close(): Promise<void>;
}

function answer(request: IncomingMessage, response: ServerResponse): void {
  // The body is not read: the answer is the same whatever was sent, and the connection closes.
  const path = (request.url ?? '/').split('?')[0] ?? '/';
  response.setHeader('Connection', 'close');
  if (path === '/healthz') {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    response.end(JSON.stringify({ status: 'starting' }));
    return;
  }
  response.writeHead(503, { 'content-type': 'application/problem+json; charset=utf-8', 'retry-after': String(RETRY_AFTER_SECONDS) });
  // `instance` is not echoed: nothing from the request goes back before the boundary checks exist.
  response.end(JSON.stringify({
    type: 'about:blank', title: 'Service Unavailable', status: 503,
    detail: 'rastro is starting: its database is not reachable yet; retry later', code: 'RASTRO_STARTING',
  }));
}

/**
 * Listens on `host:port` answering every request 503 `RASTRO_STARTING` (problem+json, with
 * `Retry-After`), and `/healthz` 200: the process is alive and will serve once its database can
 * be reached, so a liveness probe must not restart it, and clients see why they are turned away.
 */
export async function listenWhileStarting(host: string, port: number): Promise<StartingListener> {
  const server = createServer(answer);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  let closed: Promise<unknown> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      if (!closed) {
        closed = new Promise((resolve) => server.close(resolve));
        server.closeAllConnections();
      }
      await closed;
    },
  };
}
