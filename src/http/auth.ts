import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { UnauthorizedError } from '../errors.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Probes of load balancers and orchestrators, which carry no key. */
const OPEN_PATHS = new Set(['/healthz', '/readyz']);

/** An onRequest hook requiring `Authorization: Bearer <apiKey>` on every route but /healthz and /readyz. */
export function bearerAuth(apiKey: string) {
  const expected = digest(apiKey);
  return async (request: FastifyRequest): Promise<void> => {
    if (OPEN_PATHS.has(request.url.split('?')[0]!)) return;
    const match = /^Bearer (.+)$/.exec(request.headers.authorization ?? '');
    // Compare digests: equal length, constant time, whatever the caller sent.
    if (!match || !timingSafeEqual(digest(match[1]!), expected)) throw new UnauthorizedError();
  };
}
