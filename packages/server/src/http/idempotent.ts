import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database, Queryable } from 'rastro/internal/db/database.js';
import { IdempotencyKeyInFlightError, IdempotencyKeyReusedError, RastroError } from 'rastro/internal/errors.js';
import { isDatabaseUnavailable } from 'rastro/internal/db/database-error.js';
import type { AlsoStatement } from 'rastro/internal/store/append-new.js';
import { isKeyTaken, requestFingerprint, validateIdempotencyKey, type IdempotencyKeys, type StoredResponse } from './idempotency-keys.js';
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

const MAX_STATEMENT_ATTEMPTS = 4;

/** Work a POST does in one statement: given, under a key, the statement that records its response with its events. */
export type StatementWork = (record: ((response: StoredResponse) => AlsoStatement) | undefined) => Promise<StoredResponse>;

/**
 * Runs a POST whose work is one append (a deposit, a withdrawal) with the same idempotency
 * semantics as {@link runIdempotent}, in one statement and one commit instead of a claim, a
 * transaction and the response stored apart: the work's append also writes the key with its
 * response (`record`), so both commit or neither does. A key already taken makes that statement
 * fail and undoes the append; the key then answers as it would have: the first response
 * replayed, 422 for another request, 409 while one is in flight (a claim of {@link runIdempotent}).
 * A concurrent request with the same key waits for the first statement, then gets its response.
 * An error before the append is answered as the key's first response when the key has one (a
 * retry of a request that succeeded), else stored when final, else sent without touching the key.
 */
export async function runIdempotentStatement(keys: IdempotencyKeys, request: FastifyRequest, reply: FastifyReply, work: StatementWork): Promise<FastifyReply> {
  const header = request.headers['idempotency-key'];
  if (header === undefined) return send(reply, await work(undefined), false);
  const key = validateIdempotencyKey(Array.isArray(header) ? header.join(',') : header);
  const fingerprint = requestFingerprint(request.method, request.url.split('?')[0]!, request.body);
  for (let attempt = 1; ; attempt++) {
    // Each pass but the first follows a change of the key by another request: a few are plenty.
    if (attempt > MAX_STATEMENT_ATTEMPTS) throw new IdempotencyKeyInFlightError();
    try {
      return send(reply, await work((response) => keys.recordWith(key, fingerprint, response)), false);
    } catch (err) {
      // An outage: nothing to ask the key.
      if (isDatabaseUnavailable(err)) throw err;
      const taken = isKeyTaken(err);
      const found = await keys.lookup(key, fingerprint);
      if (found.kind === 'reclaimable') {
        await keys.reclaim(key, fingerprint);
        continue;
      }
      if (found.kind === 'replay') return send(reply, found.response, true);
      if (found.kind === 'reused') throw new IdempotencyKeyReusedError();
      if (found.kind === 'in-flight') throw new IdempotencyKeyInFlightError();
      // Taken, then freed (expired and cleaned up) before the lookup: try again.
      if (taken) continue;
      const problem = err instanceof RastroError ? problemFor(err, request.url) : undefined;
      if (!problem) throw err;
      if (isFinal(err as RastroError)) {
        const response = { status: problem.status, body: problem };
        if (await keys.recordFinal(key, fingerprint, response)) return send(reply, response, false);
        continue;
      }
      return sendProblem(reply, problem.status, problem.detail, { code: problem.code });
    }
  }
}
