import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { UnauthorizedError } from 'rastro/internal/errors.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Paths served without the key: the probes of load balancers and orchestrators, which carry no
 * key; the console's static files (it asks for the key, then sends it to /ops); and the API's
 * description (/openapi.json, the /docs page), which holds no data: its "Authorize" button
 * takes the key, which "Try it out" then sends, since the document declares the bearer scheme.
 */
const PUBLIC_PATHS = ['/healthz', '/readyz', '/console', '/docs', '/openapi.json'];

/** Whether a path (a URL or a route pattern) is served without the API key; `/` only leads to the console. */
export function isPublicPath(url: string): boolean {
  const path = url.split('?')[0]!;
  return path === '/' || PUBLIC_PATHS.some((open) => path === open || path.startsWith(`${open}/`));
}

/** An onRequest hook requiring `Authorization: Bearer <apiKey>` on every route but the {@link isPublicPath} ones. */
export function bearerAuth(apiKey: string) {
  const expected = digest(apiKey);
  return async (request: FastifyRequest): Promise<void> => {
    if (isPublicPath(request.url)) return;
    const match = /^Bearer (.+)$/.exec(request.headers.authorization ?? '');
    // Compare digests: equal length, constant time, whatever the caller sent.
    if (!match || !timingSafeEqual(digest(match[1]!), expected)) throw new UnauthorizedError();
  };
}
