import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable, toDatabaseError } from 'rastro/internal/db/database-error.js';
import { RastroError } from 'rastro/internal/errors.js';
import { UnstorableTextError } from './text-boundary.js';

/** Seconds a client is asked to wait (`Retry-After`) before retrying a 503. */
export const RETRY_AFTER_SECONDS = 2;

/** An RFC 9457 problem document. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code?: string;
  [extension: string]: unknown;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
  422: 'Unprocessable Content',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** The HTTP status of each rastro error code; the only place statuses are chosen. */
const STATUS_BY_CODE: Record<string, number> = {
  RASTRO_VALIDATION: 422,
  RASTRO_INSUFFICIENT_FUNDS: 422,
  RASTRO_EVENT_ID_CONFLICT: 422,
  RASTRO_IDEMPOTENCY_KEY_REUSED: 422,
  RASTRO_ACCOUNT_NOT_FOUND: 404,
  RASTRO_ORDER_NOT_FOUND: 404,
  RASTRO_CHARGE_NOT_FOUND: 404,
  RASTRO_IDEMPOTENCY_KEY_REQUIRED: 400,
  RASTRO_EFFECT_STATE: 409,
  RASTRO_NOT_FOUND: 404,
  RASTRO_CONCURRENCY: 409,
  RASTRO_CONFLICT: 409,
  RASTRO_RUN_IN_PROGRESS: 409,
  RASTRO_PARKED_EVENT_AMBIGUOUS: 409,
  RASTRO_IDEMPOTENCY_IN_FLIGHT: 409,
  RASTRO_PRECONDITION_FAILED: 412,
  RASTRO_UNAUTHORIZED: 401,
  RASTRO_TX_IDS_REWOUND: 503,
  RASTRO_DATABASE_UNAVAILABLE: 503,
};

function problem(status: number, detail: string, url: string, extensions: Record<string, unknown> = {}): Problem {
  return { type: 'about:blank', title: TITLES[status] ?? 'Error', status, detail, instance: url.split('?')[0] ?? '/', ...extensions };
}

/** The problem document for a rastro error a client can act on; undefined for server faults. */
export function problemFor(err: RastroError, url: string): Problem | undefined {
  const status = STATUS_BY_CODE[err.code];
  if (status === undefined || status >= 500) return undefined;
  const { field, runs } = err as { field?: unknown; runs?: unknown };
  return problem(status, err.message, url, { code: err.code, ...(field === undefined ? {} : { field }), ...(Array.isArray(runs) ? { runs } : {}) });
}

export function sendProblem(reply: FastifyReply, status: number, detail: string, extensions: Record<string, unknown> = {}): FastifyReply {
  if (status === 401) reply.header('WWW-Authenticate', 'Bearer');
  return reply.code(status).type('application/problem+json').send(problem(status, detail, reply.request.url, extensions));
}

/** The field a schema validation error is about, as the client wrote it: `limit`, `policy.notify.mode`… */
export function validationField(error: FastifyError): string | undefined {
  const first = error.validation?.[0];
  if (!first) return undefined;
  const params = first.params as { missingProperty?: string; additionalProperty?: string };
  const path = first.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const extra = params.missingProperty ?? params.additionalProperty;
  return [path, extra].filter(Boolean).join('.') || error.validationContext;
}


/** Maps every error to a problem document; internals never reach the response. */
export function problemErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply | Promise<FastifyReply> {
  if (isDatabaseUnavailable(error)) return sendUnavailable(reply, request, error);
  if (error instanceof UnstorableTextError) {
    return sendProblem(reply, error.status, error.message, { code: error.code, ...(error.field !== undefined ? { field: error.field } : {}) });
  }
  if (error instanceof RastroError) {
    const found = problemFor(error, request.url);
    // Its extensions (code, field, runs…) as problemFor chose them.
    if (found) return sendProblem(reply, found.status, found.detail, found);
  } else if (error.validation) {
    // Fastify's message names the part and the field, e.g. "body/amount must be integer".
    return sendProblem(reply, 422, error.message, { code: 'RASTRO_VALIDATION', field: validationField(error) });
  } else if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    // A client error raised by Fastify or a plugin (the static files' 403 on `..`) keeps its status.
    if (error.statusCode === 413) return drainThenAnswer(request, reply, error);
    return sendProblem(reply, error.statusCode, clientMessage(error), error.code ? { code: error.code } : {});
  }
  // Not under `err`: pino's error serializer would add the stack.
  request.log.error({ error: { name: error.name, code: (error as { code?: unknown }).code, sqlState: (error as { sqlState?: unknown }).sqlState, message: error.message } }, 'request failed');
  const status = error instanceof RastroError && error.code === 'RASTRO_TX_IDS_REWOUND' ? 503 : 500;
  return sendProblem(reply, status, status === 503 ? error.message : 'the server could not complete the request; it has been logged');
}

/**
 * A database that cannot be reached is not a fault of the request nor a bug: 503 with
 * `Retry-After`, and a detail that names neither the host nor the statement.
 */
function sendUnavailable(reply: FastifyReply, request: FastifyRequest, error: FastifyError): FastifyReply {
  request.log.warn({ error: { code: 'RASTRO_DATABASE_UNAVAILABLE', message: toDatabaseError(error).message } }, 'database unavailable');
  reply.header('Retry-After', String(RETRY_AFTER_SECONDS));
  return sendProblem(reply, 503, 'the database is not reachable; retry later', { code: 'RASTRO_DATABASE_UNAVAILABLE' });
}

/** The most of an unread body read and thrown away, so that a client still sending it gets the 413. */
const MAX_DRAINED_BYTES = 16 * 1024 * 1024;
const MAX_DRAIN_MS = 10_000;

/**
 * A body over the limit is refused while the client may still be sending it. Answering and
 * closing at once would make the client's next writes meet a reset, and many clients then
 * report the reset instead of the answer: so the rest of the body is read and discarded (up
 * to 16 MiB or 10 s), then the 413 is sent and the connection closed.
 */
async function drainThenAnswer(request: FastifyRequest, reply: FastifyReply, error: FastifyError): Promise<FastifyReply> {
  const raw = request.raw;
  reply.header('connection', 'close');
  const declared = Number(raw.headers['content-length'] ?? 0);
  if (!raw.complete && !raw.destroyed && declared <= MAX_DRAINED_BYTES) {
    await new Promise<void>((resolve) => {
      let read = 0;
      const done = () => {
        clearTimeout(timer);
        raw.removeListener('data', onData);
        resolve();
      };
      const onData = (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_DRAINED_BYTES) done();
      };
      const timer = setTimeout(done, MAX_DRAIN_MS);
      raw.on('data', onData).once('end', done).once('close', done).once('error', done);
      raw.resume();
    });
  }
  return sendProblem(reply, 413, clientMessage(error), { code: error.code });
}

function clientMessage(error: FastifyError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'send the body as application/json';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'the body is empty; send a JSON object';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'the body is too large';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'the body is not valid JSON';
    default:
      // Fastify's own messages name the problem; a plugin's may name files or internals.
      return error.code?.startsWith('FST_') ? error.message : `${TITLES[error.statusCode!] ?? 'client error'}: the request cannot be served as sent`;
  }
}
