import { createHash, randomUUID } from 'node:crypto';
import type { Queryable } from '../db/database.js';
import { toQueryable, type Executor } from '../db/executor.js';
import { instant, int8, json } from '../db/values.js';
import { quoteSchema } from '../db/schema-name.js';
import { MAX_AMOUNT } from '../accounts/account.js';
import { ChargeNotFoundError, ConfigError, IdempotencyKeyReusedError, ValidationError } from '../errors.js';
import { validateIdempotencyKey } from '../idempotency-key.js';
import { UUID } from '../store/validate-append.js';
import { EffectDeclinedError, type EffectType, type SettledEffect } from '../processing/ledger/effect-type.js';
import { createOutbox, outboxChannel, outboxMessageValues, type Outbox, type OutboxMessage } from '../outbox/outbox.js';
import { createAppendNotifier } from '../store/append-notifier.js';
import type { EventStore } from '../store/event-store.js';
import type { Acquirer, Capture } from './acquirer.js';
import { CAPTURE_EFFECT, captureKey, chargeSql, STATES_OF_STATUS } from './sql.js';

export type ChargeStatus = 'PENDING' | 'CAPTURED' | 'FAILED' | 'NEEDS_REVIEW';
export const CHARGE_STATUSES: readonly ChargeStatus[] = ['PENDING', 'CAPTURED', 'FAILED', 'NEEDS_REVIEW'];

export interface ChargeRequest {
  amountCents: number;
  customerId: string;
  /** ISO 4217 code. @defaultValue 'BRL' */
  currency?: string;
}

/** A charge, as the API returns it. Its status is its capture's state in the effect ledger. */
export interface Charge {
  id: string;
  idempotencyKey: string;
  amountCents: number;
  customerId: string;
  currency: string;
  status: ChargeStatus;
  /** The acquirer's capture, once CAPTURED. */
  captureId: string | null;
  /** Why it FAILED, or what is still unknown about a PENDING or NEEDS_REVIEW one. */
  reason: string | null;
  createdAt: string;
  updatedAt: string;
  /** When it entered its status: a PENDING charge since its creation, a settled one since its capture settled. */
  statusSince: string;
}

export interface ChargeOptions {
  /** The acquirer; without one, charges can be read but not created. */
  acquirer?: Acquirer;
  /** The outbox the charge's events are written to. @defaultValue the store's */
  outbox?: Outbox;
  /** The acquirer call's timeout. @defaultValue 10 s */
  timeoutMs?: number;
  /**
   * How long a charge may stay PENDING before reconciliation asks the acquirer: the request's
   * normal time with room to spare, so no call can still be on its way. Must exceed `timeoutMs`.
   * @defaultValue 2 min
   */
  deadlineMs?: number;
  /** The business deadline: a charge the acquirer still cannot account for goes to review (or is voided). @defaultValue 30 min */
  reviewAfterMs?: number;
  /** When the acquirer has no capture for the key: capture again with the same key, or FAILED. @defaultValue 'retry' */
  whenNotFound?: 'retry' | 'fail';
  /** The deadline rule: review, or void with the same key where the acquirer allows it. @defaultValue 'review' */
  onDeadline?: 'review' | 'void';
  /** The backoff between lookups answered `unknown`. @defaultValue 5 s doubling to 10 min */
  backoff?: { initialMs: number; maxMs: number };
}

interface ChargeRow {
  id: string;
  idempotency_key: string;
  request_hash: string;
  customer_id: string;
  amount_cents: number;
  currency: string;
  created_at: Date;
  updated_at: Date;
  status_since: Date;
  status: ChargeStatus;
  result: { captureId?: unknown } | null;
  error: string | null;
  checks: number;
}

const CUSTOMER = /^[^\u0000-\u001f\u007f]{1,200}$/;
const CURRENCY = /^[A-Z]{3}$/;
const FIELDS = new Set(['amountCents', 'customerId', 'currency']);

/** Checks a charge request: the account ledger's amount rules, a customer, an ISO 4217 currency. */
export function validateChargeRequest(input: unknown): Required<ChargeRequest> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new ValidationError('body', 'must be an object with amountCents and customerId');
  const unknown = Object.keys(input).find((name) => !FIELDS.has(name));
  if (unknown !== undefined) throw new ValidationError(unknown, 'is not a charge field (amountCents, customerId, currency)');
  const { amountCents, customerId, currency = 'BRL' } = input as Record<string, unknown>;
  if (typeof amountCents !== 'number' || !Number.isInteger(amountCents) || amountCents < 1 || amountCents > MAX_AMOUNT) {
    throw new ValidationError('amountCents', `must be a whole number of cents from 1 to ${MAX_AMOUNT}`);
  }
  if (typeof customerId !== 'string' || customerId.trim().length === 0 || !CUSTOMER.test(customerId)) {
    throw new ValidationError('customerId', 'must be a non-empty string of at most 200 characters, without control characters');
  }
  if (typeof currency !== 'string' || !CURRENCY.test(currency)) throw new ValidationError('currency', 'must be an ISO 4217 code of three capital letters, such as BRL');
  return { amountCents, customerId, currency };
}

function fingerprint(request: Required<ChargeRequest>): string {
  return createHash('sha256').update(JSON.stringify([request.amountCents, request.customerId, request.currency])).digest('hex');
}

function toCharge(row: ChargeRow): Charge {
  // Read through the caller's transaction too, whose driver may parse otherwise (db/values.ts).
  const result = json<{ captureId?: unknown } | null>(row.result);
  const captureId = row.status === 'CAPTURED' && typeof result?.captureId === 'string' ? result.captureId : null;
  return {
    id: row.id,
    idempotencyKey: row.idempotency_key,
    amountCents: int8(row.amount_cents),
    customerId: row.customer_id,
    currency: row.currency,
    status: row.status,
    captureId,
    reason: row.status === 'CAPTURED' ? null : row.error,
    createdAt: instant(row.created_at).toISOString(),
    updatedAt: instant(row.updated_at).toISOString(),
    statusSince: instant(row.status_since).toISOString(),
  };
}

/** What a charge's messages say of it. */
type ChargeFacts = Pick<Charge, 'id' | 'idempotencyKey' | 'amountCents' | 'currency' | 'customerId' | 'status' | 'captureId' | 'reason'>;

/** The outbox message of a settled charge; none while it is PENDING. */
function settledMessage(charge: ChargeFacts): OutboxMessage | undefined {
  const type = { CAPTURED: 'ChargeCaptured', FAILED: 'ChargeFailed', NEEDS_REVIEW: 'ChargeNeedsReview', PENDING: undefined }[charge.status];
  if (!type) return undefined;
  return {
    aggregateType: 'charge',
    aggregateId: charge.id,
    type,
    payload: { chargeId: charge.id, idempotencyKey: charge.idempotencyKey, amountCents: charge.amountCents, currency: charge.currency, customerId: charge.customerId, captureId: charge.captureId, reason: charge.reason },
  };
}

function message(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return 'the acquirer did not answer in time';
  return (err instanceof Error ? err.message : String(err)).slice(0, 500);
}

/** The charge id in a capture's ledger key. */
function chargeIdOf(key: string): string {
  return key.slice('charge:'.length);
}

/**
 * Charges that write the intent before the effect. `start` commits the charge PENDING, its
 * capture reserved in the effect ledger and a `ChargeStarted` outbox message in one transaction;
 * then calls the acquirer with the client's idempotency key; then commits CAPTURED or FAILED with
 * `ChargeCaptured` / `ChargeFailed`. A process that dies between the two leaves a PENDING charge,
 * which reconciliation settles by asking the acquirer (see {@link Charges.effectType}).
 *
 * @example
 * ```ts
 * const charges = createCharges(store, { acquirer: acquirerClient('https://acquirer.example') })
 * const { charge } = await charges.start({ amountCents: 25_000, customerId: 'c-1' }, '7f3a9c1e-…')
 * if (charge.status === 'PENDING') console.log('reconciliation will settle', charge.id)
 * ```
 */
export function createCharges(store: EventStore<any>, options: ChargeOptions = {}) {
  const db = store.db;
  const outbox = options.outbox ?? createOutbox(db, { schema: store.schema });
  // The request's own messages are written by its statements, in the outbox's schema.
  const sql = chargeSql(quoteSchema(store.schema), quoteSchema(outbox.schema));
  // Relays are woken after those statements commit, at most every 10 ms, as appends wake readers.
  const notifier = createAppendNotifier(db, outboxChannel(outbox.schema));
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadlineMs = options.deadlineMs ?? 120_000;
  if (!(deadlineMs > timeoutMs)) {
    throw new ConfigError(`the charge deadline (${deadlineMs} ms) must exceed the acquirer timeout (${timeoutMs} ms): before it passes a capture may still be on its way`);
  }
  const acquirer = options.acquirer;

  const load = async (q: Queryable, id: string): Promise<ChargeRow | undefined> => (await q.query<ChargeRow>(sql.byId, [id], { prepare: true })).rows[0];

  /** The outbox message of a settled charge, in the transaction that settles it. */
  async function writeSettled(tx: Queryable, id: string): Promise<void> {
    const row = await load(tx, id);
    if (row) await writeSettledRow(tx, toCharge(row));
  }

  async function writeSettledRow(tx: Queryable, charge: Charge): Promise<void> {
    const message = settledMessage(charge);
    if (message) await outbox.write(tx, message);
  }

  async function capture(row: { id: string; idempotency_key: string; amount_cents: number; currency: string; customer_id: string }): Promise<Capture> {
    if (!acquirer) throw new ConfigError('no acquirer is configured: set RASTRO_ACQUIRER_URL');
    return acquirer.capture(row.idempotency_key, { amountCents: Number(row.amount_cents), currency: row.currency, customerId: row.customer_id }, { signal: AbortSignal.timeout(timeoutMs) });
  }

  /**
   * Records the outcome of a call made on the request's path and its outbox message, in one
   * transaction; returns the charge as settled, or undefined when reconciliation settled it first.
   */
  async function settle(started: ChargeFacts, state: 'done' | 'failed', result: Capture | null, error: string | null): Promise<Charge | undefined> {
    // The message as the settled charge will read: its capture, or why it failed.
    const settled: ChargeFacts = { ...started, status: state === 'done' ? 'CAPTURED' : 'FAILED', captureId: result?.captureId ?? null, reason: state === 'done' ? null : error };
    const values = [captureKey(started.id), state, JSON.stringify(result ?? null), error, started.id, ...outboxMessageValues(settledMessage(settled)!)];
    const { rows } = await db.query<ChargeRow>(sql.settle, values, { prepare: true });
    // Reconciliation settled it first (and wrote its message): nothing more to say.
    if (rows.length === 0) return undefined;
    notifier.appended();
    return toCharge(rows[0]!);
  }

  /**
   * Calls the acquirer for a PENDING charge and records what it answered. Only the acquirer's
   * answer decides the outcome; a failure to record it leaves the reservation for
   * reconciliation, never a guessed "uncertain".
   */
  async function captureAndSettle(started: ChargeFacts): Promise<Charge> {
    let made: Capture | undefined;
    let failure: unknown;
    try {
      made = await capture({ id: started.id, idempotency_key: started.idempotencyKey, amount_cents: started.amountCents, currency: started.currency, customer_id: started.customerId });
    } catch (err) {
      failure = err;
    }
    let settled: Charge | undefined;
    if (made) settled = await settle(started, 'done', made, null);
    else if (failure instanceof EffectDeclinedError) settled = await settle(started, 'failed', null, message(failure));
    // A timeout, a reset, a 5xx: the capture may have happened. PENDING, for reconciliation.
    else await db.query(sql.ambiguous, [captureKey(started.id), message(failure)]);
    // Settled here, the statement returned the charge; otherwise it is read as it stands.
    return settled ?? toCharge((await load(db, started.id))!);
  }

  const effectType: EffectType = {
    settleMs: deadlineMs,
    reviewAfterMs: options.reviewAfterMs ?? 30 * 60_000,
    backoff: options.backoff,
    whenNotHappened: (options.whenNotFound ?? 'retry') === 'retry' ? 'redo' : 'fail',
    async reconcile(key) {
      if (!acquirer) return { status: 'unknown', reason: 'no acquirer is configured to ask' };
      const row = await load(db, chargeIdOf(key));
      if (!row) return { status: 'unknown', reason: 'the charge of this capture is missing' };
      const answer = await acquirer.lookup(row.idempotency_key, { signal: AbortSignal.timeout(timeoutMs) });
      if (answer.status === 'captured') return { status: 'happened', result: answer.capture };
      if (answer.status === 'not_found') return { status: 'did-not-happen' };
      return { status: 'unknown', reason: 'the acquirer could not say whether it captured' };
    },
    async redo(key) {
      const row = await load(db, chargeIdOf(key));
      if (!row) throw new Error('the charge of this capture is missing');
      return capture(row);
    },
    ...(options.onDeadline === 'void'
      ? {
          async voidOnDeadline(key: string) {
            const row = await load(db, chargeIdOf(key));
            if (!row || !acquirer?.void) return false;
            return acquirer.void(row.idempotency_key, { signal: AbortSignal.timeout(timeoutMs) });
          },
        }
      : {}),
    async onSettled(tx: Queryable, effect: SettledEffect) {
      await writeSettled(tx, chargeIdOf(effect.key));
    },
  };

  return {
    /** The capture's effect type, for reconcilers (`rastro reconcile`, serve's loop). */
    effectType,
    effectTypes: { [CAPTURE_EFFECT]: effectType },
    canCreate: acquirer !== undefined,
    /** How long a charge may stay PENDING before reconciliation asks (and it counts as stale). */
    deadlineMs,

    /**
     * Creates a charge under `idempotencyKey`, or returns the one created with it (`replayed`).
     * A retry never captures blindly: a finished charge is returned as it is; a PENDING one is
     * left to reconciliation.
     *
     * With `tx`, the application's own transaction, only the intent is written there (the charge
     * PENDING, its capture reserved, `ChargeStarted` in the outbox): it commits with the
     * application's rows or not at all, and the acquirer is not called. Call {@link capture}
     * once the transaction committed; if the process dies first, reconciliation settles the
     * charge past the deadline by asking the acquirer.
     */
    async start(input: unknown, idempotencyKey: string, options: { tx?: Executor } = {}): Promise<{ charge: Charge; replayed: boolean }> {
      const key = validateIdempotencyKey(idempotencyKey);
      const request = validateChargeRequest(input);
      if (!acquirer) throw new ConfigError('no acquirer is configured: set RASTRO_ACQUIRER_URL');
      const hash = fingerprint(request);
      const id = randomUUID();
      const startedMessage = outboxMessageValues({
        aggregateType: 'charge',
        aggregateId: id,
        type: 'ChargeStarted',
        payload: { chargeId: id, idempotencyKey: key, amountCents: request.amountCents, currency: request.currency, customerId: request.customerId },
      });
      const insertValues = [id, key, hash, request.customerId, request.amountCents, request.currency, captureKey(id), ...startedMessage];
      const existing = async (q: Queryable) => {
        const row = (await q.query<ChargeRow>(sql.byKey, [key])).rows[0];
        if (!row) throw new Error('a charge with this key was neither created nor found');
        if (row.request_hash !== hash) throw new IdempotencyKeyReusedError();
        return { charge: toCharge(row), replayed: true };
      };
      if (options.tx !== undefined) {
        const tx = toQueryable(options.tx);
        const { rows: created } = await tx.query(sql.insert, insertValues, { prepare: true });
        if (created.length === 0) return existing(tx);
        // The relay is woken when, and only if, the application's transaction commits.
        await notifier.appendedIn(tx);
        return { charge: toCharge((await load(tx, id))!), replayed: false };
      }
      // One statement: the charge PENDING, its capture reserved and ChargeStarted, committed together.
      const { rows: created } = await db.query(sql.insert, insertValues, { prepare: true });
      if (created.length === 0) return existing(db);
      notifier.appended();
      const started: ChargeFacts = { id, idempotencyKey: key, ...request, status: 'PENDING', captureId: null, reason: null };
      return { charge: await captureAndSettle(started), replayed: false };
    },

    /**
     * Captures a PENDING charge whose intent the application wrote in its own transaction
     * (`start` with `tx`), once that committed; returns the charge as it ends. A charge already
     * settled is returned as it is. The acquirer deduplicates by the charge's idempotency key, so
     * a second call, or one crossing reconciliation's, captures once.
     */
    async capture(id: string): Promise<Charge> {
      if (typeof id !== 'string' || !UUID.test(id)) throw new ChargeNotFoundError(String(id));
      const row = await load(db, id);
      if (!row) throw new ChargeNotFoundError(id);
      return row.status === 'PENDING' ? captureAndSettle(toCharge(row)) : toCharge(row);
    },

    async get(id: string): Promise<Charge> {
      if (typeof id !== 'string' || !UUID.test(id)) throw new ChargeNotFoundError(String(id));
      const row = await load(db, id);
      if (!row) throw new ChargeNotFoundError(id);
      return toCharge(row);
    },

    /** Newest first, by status, or by the ledger states of their capture (`captureStates`: how the review queue defines charges in review). */
    /**
     * Charges, newest first. `after` is the id of the last charge of the previous page: the page
     * goes on with the charges created before it (keyset, so charges created meanwhile neither
     * repeat nor hide one).
     */
    async list(filter: { status?: ChargeStatus; captureStates?: readonly string[]; limit?: number; after?: string } = {}): Promise<Charge[]> {
      if (filter.status !== undefined && !CHARGE_STATUSES.includes(filter.status)) throw new ValidationError('status', `must be one of ${CHARGE_STATUSES.join(', ')}`);
      const limit = filter.limit ?? 100;
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new ValidationError('limit', 'must be a whole number from 1 to 1000');
      const after = filter.after ?? null;
      if (after !== null) {
        if (!UUID.test(after)) throw new ValidationError('after', 'must be the id of a charge');
        if ((await db.query(sql.exists, [after])).rows.length === 0) throw new ValidationError('after', 'names no charge');
      }
      const states = filter.captureStates ?? (filter.status ? STATES_OF_STATUS[filter.status] : null);
      const { rows } = await db.query<ChargeRow>(sql.list, [states, limit, after]);
      return rows.map(toCharge);
    },

    /** PENDING charges older than the deadline, and the oldest one's age: money in an unknown place. */
    async stalePending(): Promise<{ count: number; oldestSeconds: number }> {
      const { rows } = await db.query<{ count: number; oldest_seconds: number }>(sql.stale, [deadlineMs]);
      return { count: rows[0]?.count ?? 0, oldestSeconds: rows[0]?.oldest_seconds ?? 0 };
    },

    async countsByStatus(): Promise<Record<ChargeStatus, number>> {
      const counts: Record<ChargeStatus, number> = { PENDING: 0, CAPTURED: 0, FAILED: 0, NEEDS_REVIEW: 0 };
      const { rows } = await db.query<{ status: ChargeStatus; count: number }>(sql.countsByStatus);
      for (const row of rows) counts[row.status] = row.count;
      return counts;
    },
  };
}

export type Charges = ReturnType<typeof createCharges>;
