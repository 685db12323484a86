import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError } from 'rastro/internal/errors.js';
import { problemErrorHandler, sendProblem, validationField } from './problem.js';

export const problem = { $ref: 'problem#' };
/** Every operations route: 400 bad input, 401 without the key (when one is configured). */
export const opsErrors = { 400: problem, 401: problem } as const;

export const anyObject = { type: 'object', additionalProperties: true } as const;
export const nullableNumber = { type: 'number', nullable: true } as const;
export const nullableString = { type: 'string', nullable: true } as const;
export const counters = { type: 'object', additionalProperties: { type: 'number' } } as const;
export const emptyBody = { type: 'object', additionalProperties: false, description: 'send {}' } as const;

export const runIdPattern = '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$';
export const uuidPattern = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
export const limitQuery = { type: 'integer', minimum: 1, maximum: 1000, default: 100 } as const;

const INTEGER_QUERY = new Set(['limit', 'offset', 'minutes']);

/**
 * Reads the integer query parameters as numbers before validation: the app validates without
 * coercion (a body's "100" is not 100), but a query string has only text. Anything else stays
 * text, so `limit=ten` still fails as "must be integer".
 */
export function integerQueries(request: FastifyRequest): void {
  const query = request.query as Record<string, unknown> | undefined;
  if (!query) return;
  for (const key of Object.keys(query)) {
    const value = query[key];
    if (INTEGER_QUERY.has(key) && typeof value === 'string' && /^-?\d{1,15}$/.test(value)) query[key] = Number(value);
  }
}

/** The operations API answers bad input with 400 naming the field, library rule breaks included. */
export function opsErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply | Promise<FastifyReply> {
  if (error.validation) return sendProblem(reply, 400, error.message, { code: 'RASTRO_VALIDATION', field: validationField(error) });
  if (error instanceof ValidationError) return sendProblem(reply, 400, error.message, { code: error.code, field: error.field });
  return problemErrorHandler(error, request, reply);
}
