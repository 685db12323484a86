import { createServer } from 'node:http';

/**
 * A provider of notices as a real HTTP server: `POST /notices` with `{ key }` (deduplicated by
 * key; `calls` counts every request per key), `GET /notices/{key}` (200 or 404), and
 * `GET /notices?since=` listing the keys received since a time.
 */
export async function startNotifierFake() {
  const received = new Map<string, Date>();
  const calls = new Map<string, number>();
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://fake');
    const send = (status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (request.method === 'POST' && url.pathname === '/notices') {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        const { key } = JSON.parse(body) as { key: string };
        calls.set(key, (calls.get(key) ?? 0) + 1);
        if (!received.has(key)) received.set(key, new Date());
        send(201, { key });
      });
      return;
    }
    if (request.method === 'GET' && url.pathname === '/notices') {
      const since = new Date(url.searchParams.get('since') ?? 0);
      return send(200, { keys: [...received].filter(([, at]) => at >= since).map(([key]) => key) });
    }
    const keyed = /^\/notices\/(.+)$/.exec(url.pathname);
    if (request.method === 'GET' && keyed) return send(received.has(decodeURIComponent(keyed[1]!)) ? 200 : 404, {});
    send(404, {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
