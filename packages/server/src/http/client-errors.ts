import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem } from './problem.js';

const FRAMING_STATUS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout'],
  ERR_HTTP_REQUEST_HEADERS_TIMEOUT: [408, 'Request Timeout'],
};

/**
 * Requests Node's HTTP parser refuses before Fastify sees them — Content-Length beside
 * Transfer-Encoding, a negative Content-Length, a malformed request line, headers too large,
 * or too slow — still get a problem document, then the connection closes: after a framing
 * error nothing else on it can be trusted to start where a request starts.
 */
export function framingErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, title] = FRAMING_STATUS[error.code ?? ''] ?? [400, 'Bad Request'];
  const detail =
    status === 408 ? 'the request was not received in time; the connection is closed'
    : status === 431 ? 'the request headers are too large'
    : 'the request is not valid HTTP/1.1 (for example Content-Length with Transfer-Encoding, or a negative Content-Length); the connection is closed';
  const body = JSON.stringify({ type: 'about:blank', title, status, detail, code: error.code ?? 'RASTRO_BAD_REQUEST' });
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\ncontent-type: application/problem+json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** A route's URL pattern as a regular expression over a decoded path (`:id` is one segment, `*` the rest). */
function patternOf(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/**
 * 404 for a path no route serves, 405 with `Allow` for a path served under other methods only
 * (RFC 9110 §15.5.6). Call before the routes are registered: it collects their patterns.
 */
export function notFoundOrMethodNotAllowed(app: FastifyInstance): void {
  const routes: { pattern: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String);
    routes.push({ pattern: patternOf(route.url), methods });
  });
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    let decoded = path;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      // A path that does not decode matches no route's pattern either.
    }
    const allowed = new Set(routes.filter((route) => route.pattern.test(path) || route.pattern.test(decoded)).flatMap((route) => route.methods));
    if (allowed.size > 0 && !allowed.has(request.method)) {
      const allow = METHODS.filter((method) => allowed.has(method));
      reply.header('Allow', allow.join(', '));
      return sendProblem(reply, 405, `${request.method} is not allowed on ${path}; use ${allow.join(' or ')}`);
    }
    return sendProblem(reply, 404, `no route for ${request.method} ${path}`);
  });
}
