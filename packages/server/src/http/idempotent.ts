import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database, Queryable } from 'rastro/internal/db/database.js';
import { IdempotencyKeyInFlightError, IdempotencyKeyReusedError, RastroError } from 'rastro/internal/errors.js';
import { requestFingerprint, validateIdempotencyKey, type IdempotencyKeys, type StoredResponse } from './idempotency-keys.js';
import { problemFor, sendProblem } from './problem.js';

/** Work a POST does: given a transaction when it runs under a key, none otherwise. */
export type RequestWork = (tx: Queryable | undefined) => Promise<StoredResponse>;

function send(reply: FastifyReply, response: StoredResponse, replayed: boolean): FastifyReply {
  if (replayed) reply.header('Idempotent-Replayed', 'true');
  if (response.status >= 400) reply.type('application/problem+json');
  return reply.code(response.status).send(response.body);
}

/**
 * Runs a POST with Stripe's idempotency semantics when it carries an `Idempotency-Key`: the
 * first response (success, or a final client error such as insufficient funds) is stored with
 * the work's writes and replayed for retries; errors that a retry could cure release the key.
 */
export async function runIdempotent(
  db: Database,
  keys: IdempotencyKeys,
  request: FastifyRequest,
  reply: FastifyReply,
  work: RequestWork,
): Promise<FastifyReply> {
  const header = request.headers['idempotency-key'];
  if (header === undefined) return send(reply, await work(undefined), false);
  const key = validateIdempotencyKey(Array.isArray(header) ? header.join(',') : header);
  const claim = await keys.claim(key, requestFingerprint(request.method, request.url.split('?')[0]!, request.body));
  if (claim.kind === 'reused') throw new IdempotencyKeyReusedError();
  if (claim.kind === 'in-flight') throw new IdempotencyKeyInFlightError();
  if (claim.kind === 'replay') return send(reply, claim.response, true);

  try {
    const response = await db.transaction(async (tx) => {
      const result = await work(tx);
      await keys.complete(tx, key, claim.owner, result);
      return result;
    });
    return send(reply, response, false);
  } catch (err) {
    const problem = err instanceof RastroError ? problemFor(err, request.url) : undefined;
    if (problem && isFinal(err as RastroError)) {
      const response = { status: problem.status, body: problem };
      await keys.complete(db, key, claim.owner, response);
      return send(reply, response, false);
    }
    await keys.release(key, claim.owner).catch(() => undefined);
    if (problem) return sendProblem(reply, problem.status, problem.detail, { code: problem.code });
    throw err;
  }
}

/** Outcomes a retry of the same request would get again: stored like a success. */
function isFinal(err: RastroError): boolean {
  return ['RASTRO_INSUFFICIENT_FUNDS', 'RASTRO_ACCOUNT_NOT_FOUND', 'RASTRO_VALIDATION'].includes(err.code);
}
