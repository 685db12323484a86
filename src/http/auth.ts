import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { UnauthorizedError } from '../errors.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** An onRequest hook requiring `Authorization: Bearer <apiKey>` on every route but /healthz. */
export function bearerAuth(apiKey: string) {
  const expected = digest(apiKey);
  return async (request: FastifyRequest): Promise<void> => {
    if (request.url === '/healthz' || request.url.startsWith('/healthz?')) return;
    const match = /^Bearer (.+)$/.exec(request.headers.authorization ?? '');
    // Compare digests: equal length, constant time, whatever the caller sent.
    if (!match || !timingSafeEqual(digest(match[1]!), expected)) throw new UnauthorizedError();
  };
}
