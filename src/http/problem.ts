import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ConcurrencyError, RastroError, ValidationError } from '../errors.js';

/** An RFC 9457 problem document. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  [extension: string]: unknown;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function sendProblem(reply: FastifyReply, status: number, detail: string, extensions: Record<string, unknown> = {}): FastifyReply {
  const problem: Problem = {
    type: 'about:blank',
    title: TITLES[status] ?? 'Error',
    status,
    detail,
    instance: reply.request.url.split('?')[0] ?? '/',
    ...extensions,
  };
  return reply.code(status).type('application/problem+json').send(problem);
}

/** Maps rastro errors and Fastify's request errors to problems; anything else is a 500 without internals. */
export function problemErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof ValidationError) return sendProblem(reply, 422, error.message, { code: error.code, field: error.field });
  if (error instanceof ConcurrencyError) return sendProblem(reply, 409, error.message, { code: error.code });
  if (error instanceof RastroError && error.code === 'RASTRO_EVENT_ID_CONFLICT') return sendProblem(reply, 422, error.message, { code: error.code });
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // Fastify's own client errors (malformed JSON, wrong content type, body too large, schema).
    const detail = error.validation ? `request ${error.message}` : error.message;
    return sendProblem(reply, error.validation ? 422 : status, detail, { code: error.code });
  }
  request.log.error({ err: { type: error.name, code: (error as { code?: string }).code, message: error.message } }, 'request failed');
  return sendProblem(reply, 500, 'the server could not complete the request; it has been logged');
}
