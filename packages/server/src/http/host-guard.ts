import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem } from './problem.js';

/** The names a server without a key answers to, whatever its port. */
export const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'] as const;

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** `Host: LocalHost:3000` → `localhost`; `[::1]:3000` → `[::1]`; undefined when malformed. */
export function hostName(host: string): string | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/@\s]+)(?::(\d{1,5}))?$/.exec(host.trim());
  return match ? match[1]!.toLowerCase() : undefined;
}

/**
 * An onRequest hook for a server without an API key. Such a server is meant for the machine it
 * runs on, but a web page its operator visits could reach it by DNS rebinding (a name of the
 * page's own that resolves to 127.0.0.1), as its own origin. So: only requests whose `Host`
 * names the loopback (`localhost`, `127.0.0.1`, `[::1]`, any port) or one of `allowedHosts`
 * are served (403 otherwise), and a state-changing request (POST, PUT, PATCH, DELETE) carrying
 * an `Origin` other than the server's own is refused (403), so no page on another origin can
 * open accounts, start replays or resolve charges through the operator's browser.
 *
 * @example
 * ```ts
 * app.addHook('onRequest', loopbackOnly(['rastro.internal']))
 * ```
 */
export function loopbackOnly(allowedHosts: readonly string[] = []) {
  const allowed = new Set<string>([...LOOPBACK_HOSTS, ...allowedHosts.map((host) => hostName(host) ?? host.toLowerCase())]);
  // A client sends the same Host on every request: the last one allowed is not parsed again.
  let lastAllowed: string | undefined;
  // A callback hook: it runs on every request, where an async one costs a promise and a tick.
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const host = request.headers.host ?? '';
    if (host !== lastAllowed) {
      const name = hostName(host);
      if (name === undefined || !allowed.has(name)) {
        sendProblem(reply, 403, `this server has no API key, so it answers only to the loopback (localhost, 127.0.0.1, [::1]) and RASTRO_ALLOWED_HOSTS, not to Host ${JSON.stringify(host)}`, { code: 'RASTRO_HOST_NOT_ALLOWED' });
        return;
      }
      lastAllowed = host;
    }
    const origin = request.headers.origin;
    if (origin !== undefined && STATE_CHANGING.has(request.method) && !sameOrigin(origin, host)) {
      sendProblem(reply, 403, `a state-changing request from another origin (${JSON.stringify(origin)}) is refused by a server without an API key`, { code: 'RASTRO_ORIGIN_NOT_ALLOWED' });
      return;
    }
    done();
  };
}

/** Whether `Origin` is this server as the request addressed it (`http://<Host>`). */
function sameOrigin(origin: string, host: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed page, a file) and anything unparseable are foreign.
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  return url.host.toLowerCase() === new URL(`http://${host}`).host.toLowerCase();
}
