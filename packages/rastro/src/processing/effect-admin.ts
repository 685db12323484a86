import type { Queryable } from '../db/database.js';
import type { EffectTypes, SettledEffect } from './ledger/effect-type.js';
import { quoteSchema } from '../db/schema-name.js';
import { RastroError, ValidationError } from '../errors.js';
import type { EventStore } from '../store/event-store.js';
import { processingSql, type ProcessingSql } from './sql.js';

/**
 * Where an effect stands: `reserved` (the intent is recorded, the call may be under way), `done`,
 * `uncertain` (the call may or may not have happened: reconciliation asks, or a person decides),
 * `failed` (the provider confirmed it did not happen), `needs-review` (the provider could not
 * say before the business deadline).
 */
export type EffectState = 'reserved' | 'done' | 'uncertain' | 'failed' | 'needs-review';
export const EFFECT_STATES: readonly EffectState[] = ['reserved', 'done', 'uncertain', 'failed', 'needs-review'];

/** An effect ledger entry. */
export interface EffectRecord {
  key: string;
  eventId: string;
  effectType: string;
  state: EffectState;
  runId: string;
  onFailure: 'release' | 'keep';
  result: unknown;
  error: string | null;
  reservedAt: Date;
  updatedAt: Date;
  /** When it entered its state (`updatedAt` moves at every reconciliation pass). */
  stateSince: Date;
  /** Questions reconciliation asked the provider. */
  checks: number;
  /** When reconciliation asks next, after an "unknown". */
  checkAfter: Date | null;
}

interface EffectRow {
  key: string;
  event_id: string;
  effect_type: string;
  state: EffectState;
  run_id: string;
  on_failure: EffectRecord['onFailure'];
  result: unknown;
  error: string | null;
  reserved_at: Date;
  updated_at: Date;
  state_since: Date;
  checks: number;
  check_after: Date | null;
}

/** The effect is not in the state the operation needs (for example resolving one that is not uncertain). */
export class EffectStateError extends RastroError {
  constructor(key: string, need: string) {
    super('RASTRO_EFFECT_STATE', `effect ${JSON.stringify(key)} is not ${need}; list effects to see its state`);
  }
}

function effectRecord(row: EffectRow): EffectRecord {
  return {
    key: row.key,
    eventId: row.event_id,
    effectType: row.effect_type,
    state: row.state,
    runId: row.run_id,
    onFailure: row.on_failure,
    result: row.result,
    error: row.error,
    reservedAt: row.reserved_at,
    updatedAt: row.updated_at,
    stateSince: row.state_since,
    checks: row.checks,
    checkAfter: row.check_after,
  };
}

/**
 * Moves reservations abandoned by dead runners (their lock is gone) or older than the lease:
 * under `keep` to `uncertain` for review, under `release` out of the ledger so the next run
 * calls the (deduplicating) provider again.
 */
export async function sweepAbandonedReservations(db: Queryable, sql: ProcessingSql, leaseMs: number, ownToken = 0): Promise<{ uncertain: number; released: number }> {
  const uncertain = await db.query(sql.sweepKeep, [leaseMs, ownToken]);
  const released = await db.query(sql.sweepRelease, [leaseMs, ownToken]);
  return { uncertain: uncertain.rowCount, released: released.rowCount };
}

/**
 * The review side of the effect ledger: list entries, resolve uncertain ones, sweep.
 *
 * @example
 * ```ts
 * const effects = effectLedger(store)
 * for (const effect of await effects.list({ state: 'uncertain' })) console.log(effect.key, effect.error)
 * await effects.resolve(key, 'done') // someone confirmed it happened
 * ```
 */
export function effectLedger(store: EventStore<any>, options: { types?: EffectTypes } = {}) {
  const sql = processingSql(quoteSchema(store.schema));
  const db = store.db;
  return {
    /** Newest first: of one `state`, or of `states` but not of `exceptTypes` (how the review queue defines its effects). */
    async list(filter: { state?: EffectState; states?: readonly EffectState[]; exceptTypes?: readonly string[]; limit?: number } = {}): Promise<EffectRecord[]> {
      if (filter.state !== undefined && !EFFECT_STATES.includes(filter.state)) {
        throw new ValidationError('state', `must be one of ${EFFECT_STATES.map((state) => `'${state}'`).join(', ')}`);
      }
      const { rows } = await db.query<EffectRow>(sql.listEffects, [filter.state ?? null, filter.limit ?? 1000, filter.states ?? null, filter.exceptTypes ?? null]);
      return rows.map(effectRecord);
    },
    /** How many entries are in `states`, of `types` only (when given), not of `exceptTypes`. */
    async count(filter: { states: readonly EffectState[]; types?: readonly string[]; exceptTypes?: readonly string[] }): Promise<number> {
      const { rows } = await db.query<{ n: number }>(sql.countEffects, [filter.states, filter.types ?? null, filter.exceptTypes ?? null]);
      return Number(rows[0]?.n ?? 0);
    },
    /** One ledger entry, or undefined when the key has none. */
    async get(key: string): Promise<EffectRecord | undefined> {
      const { rows } = await db.query<EffectRow>(sql.effectByKey, [key]);
      return rows[0] ? effectRecord(rows[0]) : undefined;
    },
    /** How many entries are in each state. */
    async countByState(): Promise<Record<EffectRecord['state'], number>> {
      const { rows } = await db.query<{ state: EffectRecord['state']; n: number }>(sql.effectsByState);
      const counts: Record<EffectState, number> = { reserved: 0, done: 0, uncertain: 0, failed: 0, 'needs-review': 0 };
      for (const row of rows) counts[row.state] = Number(row.n);
      return counts;
    },
    /** How many entries of `state` (for example `needs-review`) there are per effect type. */
    async countByType(state: EffectState): Promise<Record<string, number>> {
      if (!EFFECT_STATES.includes(state)) throw new ValidationError('state', `must be one of ${EFFECT_STATES.map((s) => `'${s}'`).join(', ')}`);
      const { rows } = await db.query<{ effect_type: string; n: number }>(sql.effectsOfStateByType, [state]);
      return Object.fromEntries(rows.map((row) => [row.effect_type, Number(row.n)]));
    },
    /**
     * Resolves an effect that is `uncertain` or in review, as a person who checked decided:
     * `done` (it happened), `failed` (it did not, and must not be retried) or `retry` (it did not:
     * released, so the next run that reaches its event performs it; only an event's effects).
     * The effect type's `onSettled` (a charge's outbox event) is written in the same transaction.
     */
    async resolve(key: string, as: 'done' | 'failed' | 'retry'): Promise<void> {
      if (as !== 'done' && as !== 'retry' && as !== 'failed') throw new ValidationError('as', "must be 'done', 'failed' or 'retry'");
      await db.transaction(async (tx) => {
        const statement = as === 'done' ? sql.resolveDone : as === 'failed' ? sql.resolveFailed : sql.resolveRetry;
        const params = as === 'failed' ? [key, 'a person confirmed it did not happen'] : [key];
        const { rows } = await tx.query<{ key: string; event_id: string | null; effect_type: string; state: SettledEffect['state']; result: unknown; error: string | null }>(statement, params);
        const row = rows[0];
        if (!row) {
          const { rows: found } = await tx.query<{ state: string; event_id: string | null }>(sql.effectState, [key]);
          if (as === 'retry' && found[0] && found[0].event_id === null && ['uncertain', 'needs-review'].includes(found[0].state)) {
            throw new EffectStateError(key, "an event's effect (it was made on a request's path; resolve it as done or failed)");
          }
          throw new EffectStateError(key, 'uncertain or in review');
        }
        if (as !== 'retry') {
          await options.types?.[row.effect_type]?.onSettled?.(tx, { key: row.key, eventId: row.event_id, effectType: row.effect_type, state: row.state, result: row.result, error: row.error });
        }
      });
    },
    sweep: (leaseMs = 5 * 60_000) => sweepAbandonedReservations(db, sql, leaseMs),
  };
}
