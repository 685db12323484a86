import type { Queryable } from '../db/database.js';
import { quoteSchema } from '../db/schema-name.js';
import { RastroError, ValidationError } from '../errors.js';
import type { EventStore } from '../store/event-store.js';
import { processingSql, type ProcessingSql } from './sql.js';

/** An effect ledger entry. */
export interface EffectRecord {
  key: string;
  eventId: string;
  effectType: string;
  state: 'reserved' | 'done' | 'uncertain';
  runId: string;
  onFailure: 'release' | 'keep';
  result: unknown;
  error: string | null;
  reservedAt: Date;
  updatedAt: Date;
}

interface EffectRow {
  key: string;
  event_id: string;
  effect_type: string;
  state: EffectRecord['state'];
  run_id: string;
  on_failure: EffectRecord['onFailure'];
  result: unknown;
  error: string | null;
  reserved_at: Date;
  updated_at: Date;
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
export function effectLedger(store: EventStore) {
  const sql = processingSql(quoteSchema(store.schema));
  const db = store.db;
  return {
    async list(options: { state?: 'reserved' | 'done' | 'uncertain'; limit?: number } = {}): Promise<EffectRecord[]> {
      if (options.state !== undefined && !['reserved', 'done', 'uncertain'].includes(options.state)) {
        throw new ValidationError('state', "must be 'reserved', 'done' or 'uncertain'");
      }
      const { rows } = await db.query<EffectRow>(sql.listEffects, [options.state ?? null, options.limit ?? 1000]);
      return rows.map(effectRecord);
    },
    /** One ledger entry, or undefined when the key has none. */
    async get(key: string): Promise<EffectRecord | undefined> {
      const { rows } = await db.query<EffectRow>(sql.effectByKey, [key]);
      return rows[0] ? effectRecord(rows[0]) : undefined;
    },
    /** How many entries are in each state. */
    async countByState(): Promise<Record<EffectRecord['state'], number>> {
      const { rows } = await db.query<{ state: EffectRecord['state']; n: number }>(sql.effectsByState);
      const counts = { reserved: 0, done: 0, uncertain: 0 };
      for (const row of rows) counts[row.state] = Number(row.n);
      return counts;
    },
    /**
     * Resolves an uncertain effect: `done` when someone confirmed it happened; `retry` releases
     * it, so the next run that reaches its event executes it.
     */
    async resolve(key: string, as: 'done' | 'retry'): Promise<void> {
      if (as !== 'done' && as !== 'retry') throw new ValidationError('as', "must be 'done' or 'retry'");
      const { rowCount } = await db.query(as === 'done' ? sql.resolveDone : sql.resolveRetry, [key]);
      if (rowCount !== 1) throw new EffectStateError(key, 'uncertain');
    },
    sweep: (leaseMs = 5 * 60_000) => sweepAbandonedReservations(db, sql, leaseMs),
  };
}
