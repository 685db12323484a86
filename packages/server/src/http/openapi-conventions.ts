import type { FastifyInstance, RouteOptions } from 'fastify';

const problem = { $ref: 'problem#' };

/** A camelCase operation id from the method and the path: `GET /healthz` → `getHealthz`. */
function derivedOperationId(route: RouteOptions): string {
  const method = (Array.isArray(route.method) ? route.method[0]! : route.method).toLowerCase();
  const words = route.url.split(/[^A-Za-z0-9]+/).filter(Boolean).map((word) => word[0]!.toUpperCase() + word.slice(1));
  return method + words.join('');
}

/**
 * What every operation in the OpenAPI document carries, filled in where a route leaves it out:
 * an operationId, the 400 a malformed request gets from any route, the 401 without the key
 * when one is required, and no security on the routes open without it.
 */
export function openApiConventions(app: FastifyInstance, options: { apiKey: boolean; isPublic: (url: string) => boolean }): void {
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ??= {}) as Record<string, unknown> & { hide?: boolean; response?: Record<string, unknown> };
    if (schema.hide) return;
    schema.operationId ??= derivedOperationId(route);
    const response = (schema.response ??= {});
    // A route that declared no success response still documents one (any JSON object).
    if (!Object.keys(response).some((status) => status.startsWith('2'))) response['200'] ??= { description: 'OK', type: 'object', additionalProperties: true };
    response['400'] ??= problem;
    if (options.isPublic(route.url)) schema.security = [];
    else if (options.apiKey) response['401'] ??= problem;
  });
}
