import type {} from '@fastify/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from 'rastro/internal/db/database.js';
import { MAX_AMOUNT, MAX_OWNER_LENGTH } from 'rastro/internal/accounts/account.js';
import { toMovement, validateOwner, type AccountLedger, type Movement } from 'rastro/internal/accounts/account-ledger.js';
import { PreconditionFailedError } from 'rastro/internal/errors.js';
import { runIdempotent, runIdempotentStatement } from './idempotent.js';
import type { IdempotencyKeys } from './idempotency-keys.js';

export interface AccountRouteDeps {
  db: Database;
  ledger: AccountLedger;
  keys: IdempotencyKeys;
}

const problem = { $ref: 'problem#' };
const errors = { 400: problem, 401: problem, 404: problem, 409: problem, 412: problem, 415: problem, 422: problem };
const accountId = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const;
const postHeaders = {
  type: 'object',
  properties: {
    'idempotency-key': { type: 'string', description: 'Retries with the same key and body return the first response.' },
    'if-match': { type: 'string', description: 'W/"<version>" from GET /accounts/{id}/balance.' },
  },
} as const;
const movement = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    type: { type: 'string', enum: ['AccountDeposited', 'AccountWithdrawn'] },
    amount: { type: 'integer' },
    version: { type: 'integer' },
    occurredAt: { type: 'string', format: 'date-time' },
  },
} as const;
const amountBody = {
  type: 'object',
  properties: { amount: { type: 'integer', minimum: 1, maximum: MAX_AMOUNT } },
  required: ['amount'],
  additionalProperties: false,
} as const;

/** Parses If-Match: `*`, or a list of entity tags of the form W/"<version>" or "<version>". */
function ifMatchVersion(request: FastifyRequest): number | undefined | 'any' {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  if (header.trim() === '*') return 'any';
  const versions = header.split(',').map((tag) => /^\s*(?:W\/)?"(\d{1,15})"\s*$/.exec(tag)?.[1]);
  const first = versions[0];
  // An unparseable tag matches no version: the precondition fails.
  return first !== undefined && versions.length === 1 ? Number(first) : -1;
}

type IdParams = { Params: { id: string } };
type AmountRequest = FastifyRequest<IdParams & { Body: { amount: number } }>;

/** The account ledger API: open accounts, deposit, withdraw, replayed balances and history. */
export async function accountRoutes(app: FastifyInstance, { db, ledger, keys }: AccountRouteDeps): Promise<void> {
  app.post<{ Body: { owner: string } }>(
    '/accounts',
    {
      schema: {
        operationId: 'openAccount',
        summary: 'Open an account',
        headers: postHeaders,
        body: {
          type: 'object',
          properties: { owner: { type: 'string', minLength: 1, maxLength: MAX_OWNER_LENGTH } },
          required: ['owner'],
          additionalProperties: false,
        },
        response: {
          201: { type: 'object', properties: { id: { type: 'string' }, owner: { type: 'string' }, createdAt: { type: 'string' } } },
          ...errors,
        },
      },
    },
    (request, reply) =>
      runIdempotent(db, keys, request, reply, async (tx) => {
        const account = await ledger.open(validateOwner(request.body.owner), { tx });
        return { status: 201, body: { id: account.id, owner: account.owner, createdAt: account.createdAt } };
      }),
  );

  app.get<IdParams>(
    '/accounts/:id/balance',
    {
      schema: {
        operationId: 'getAccount',
        summary: 'The balance, replayed from the events',
        params: accountId,
        response: {
          200: { type: 'object', properties: { accountId: { type: 'string' }, balance: { type: 'integer' }, version: { type: 'integer' } } },
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const account = await ledger.get(request.params.id);
      reply.header('ETag', `W/"${account.version}"`);
      return { accountId: account.id, balance: account.balance, version: account.version };
    },
  );

  const moveRoute = (path: string, operationId: string, summary: string, move: AccountLedger['deposit']) =>
    app.post<IdParams & { Body: { amount: number } }>(
      path,
      { schema: { operationId, summary, params: accountId, headers: postHeaders, body: amountBody, response: { 201: movement, ...errors } } },
      // One statement: the event, and under a key its stored response (see runIdempotentStatement).
      (request: AmountRequest, reply: FastifyReply) =>
        runIdempotentStatement(keys, request, reply, async (record) => {
          const ifMatch = ifMatchVersion(request);
          if (ifMatch === -1) throw new PreconditionFailedError(String(request.headers['if-match']), (await ledger.get(request.params.id)).version);
          const ifVersion = ifMatch === 'any' ? undefined : ifMatch;
          const also = record && ((movement: Movement) => record({ status: 201, body: movement }));
          return { status: 201, body: await move(request.params.id, request.body.amount, { ifVersion, also }) };
        }),
    );
  moveRoute('/accounts/:id/deposit', 'deposit', 'Deposit', ledger.deposit);
  moveRoute('/accounts/:id/withdraw', 'withdraw', 'Withdraw; refused above the replayed balance', ledger.withdraw);

  app.get<IdParams & { Querystring: { after?: string; limit?: string } }>(
    '/accounts/:id/events',
    {
      schema: {
        operationId: 'listAccountEvents',
        summary: "The account's events in order",
        params: accountId,
        querystring: {
          type: 'object',
          properties: {
            after: { type: 'string', pattern: '^\\d{1,15}$', description: 'Return events after this version.' },
            limit: { type: 'string', pattern: '^([1-9]\\d{0,2}|1000)$', description: '1 to 1000, default 100.' },
          },
          additionalProperties: false,
        },
        response: { 200: { type: 'object', properties: { events: { type: 'array', items: { type: 'object', additionalProperties: true } } } }, ...errors },
      },
    },
    async (request) => {
      const events = await ledger.events(request.params.id, { after: Number(request.query.after ?? 0), limit: Number(request.query.limit ?? 100) });
      return {
        events: events.map((event) =>
          event.type === 'AccountOpened'
            ? { id: event.id, type: event.type, owner: event.data.owner, version: event.streamVersion, occurredAt: event.occurredAt.toISOString() }
            : toMovement(event),
        ),
      };
    },
  );
}
