import type { Database } from '../../db/database.js';
import { quoteSchema } from '../../db/schema-name.js';
import { ValidationError } from '../../errors.js';
import type { EventStore } from '../../store/event-store.js';
import { WakeUp } from '../../store/wake-up.js';
import { openRunnerSession } from '../runner-session.js';
import { processingSql } from '../sql.js';
import {
  backoffMs,
  EffectDeclinedError,
  resolveEffectType,
  type EffectTypes,
  type ReconcileAnswer,
  type ResolvedEffectType,
  type SettledEffect,
  type UnsettledEffect,
} from './effect-type.js';
import { reconcileSql, type ReconcileSql } from './reconcile-sql.js';

/** What one reconciliation pass did, per outcome. */
export interface ReconcileReport {
  /** Effects claimed and asked about. */
  asked: number;
  /** The provider said it happened: now `done`. */
  happened: number;
  /** It did not happen, and the entry was released for the next run. */
  released: number;
  /** It did not happen (or was voided at the deadline): now `failed`. */
  failed: number;
  /** It did not happen and was performed again with the same key. */
  redone: number;
  /** The provider could not say: asked again after a backoff. */
  unknown: number;
  /** Unknown past the business deadline: now `needs-review`. */
  review: number;
  /** Settled by someone else (its owner, a person) while the provider was being asked. */
  settledMeanwhile: number;
}

export interface ReconcilerOptions {
  /** The effect types that can be asked, by name; effects of other types are left alone. */
  types: EffectTypes;
  /** Effects claimed per pass. @defaultValue 100 */
  limit?: number;
  /** Questions to providers at once. @defaultValue 8 */
  concurrency?: number;
  /**
   * A reservation whose owner is alive counts as abandoned past this age: the runners' lease.
   * @defaultValue 5 min
   */
  leaseMs?: number;
}

interface ClaimRow {
  key: string;
  event_id: string | null;
  effect_type: string;
  state: 'reserved' | 'uncertain';
  reserved_at: Date;
  /** Questions answered before this one. */
  checks: number;
  error: string | null;
  past_deadline: boolean;
}

interface SettledRow {
  key: string;
  event_id: string | null;
  effect_type: string;
  state: SettledEffect['state'];
  result: unknown;
  error: string | null;
}

const NO_REPORT: ReconcileReport = Object.freeze({ asked: 0, happened: 0, released: 0, failed: 0, redone: 0, unknown: 0, review: 0, settledMeanwhile: 0 });

function message(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 2000);
}

function checkAnswer(answer: unknown): ReconcileAnswer {
  const status = (answer as { status?: unknown } | null)?.status;
  if (status === 'happened' || status === 'did-not-happen' || status === 'unknown') return answer as ReconcileAnswer;
  return { status: 'unknown', reason: `the provider's answer was not understood: ${JSON.stringify(answer)?.slice(0, 200)}` };
}

/** Adds `b` to `a`, outcome by outcome. */
export function addReports(a: ReconcileReport, b: ReconcileReport): ReconcileReport {
  const sum = { ...a };
  for (const name of Object.keys(NO_REPORT) as (keyof ReconcileReport)[]) sum[name] += b[name];
  return sum;
}

async function inParallel<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Settles effects by asking their providers: the reconciliation of the effect ledger. A pass
 * claims abandoned reservations and uncertain entries of the given types, asks about each key and
 * acts on the answer:
 * - `happened` → `done`, with the provider's result;
 * - `did-not-happen` → released (the next run performs it), `failed`, or performed again with
 *   the same key, as the type says;
 * - `unknown` → asked again after an exponential backoff, which never waits past the type's
 *   business deadline; past it the effect is voided, where the provider allows it, or goes to
 *   review (`needs-review`).
 *
 * Nothing is settled without the provider's answer.
 */
export class Reconciler {
  private readonly db: Database;
  private readonly sql: ReconcileSql;
  private readonly types: Map<string, ResolvedEffectType>;
  private readonly limit: number;
  private readonly concurrency: number;
  private readonly leaseMs: number;

  constructor(store: EventStore<any>, options: ReconcilerOptions) {
    if (typeof options?.types !== 'object' || options.types === null) throw new ValidationError('types', 'must map effect types to their reconcile definitions');
    this.db = store.db;
    this.sql = reconcileSql(quoteSchema(store.schema));
    this.types = new Map(Object.entries(options.types).map(([name, type]) => [name, resolveEffectType(name, type)]));
    this.limit = options.limit ?? 100;
    this.concurrency = options.concurrency ?? 8;
    this.leaseMs = options.leaseMs ?? 5 * 60_000;
    if (!Number.isInteger(this.limit) || this.limit < 1) throw new ValidationError('limit', 'must be a whole number, 1 or more');
  }

  /** The effect types this reconciler asks about. */
  get typeNames(): string[] {
    return [...this.types.keys()];
  }

  /** One pass, as the reconciler holding the liveness lock of `token`. */
  async pass(token: number): Promise<ReconcileReport> {
    if (this.types.size === 0) return { ...NO_REPORT };
    const types = [...this.types];
    const { rows } = await this.db.query<ClaimRow>(this.sql.claim, [
      token,
      types.map(([name]) => name),
      types.map(([, type]) => type.settleMs),
      types.map(([, type]) => Math.max(type.settleMs, this.leaseMs)),
      this.limit,
      types.map(([, type]) => type.reviewAfterMs),
    ]);
    const report = { ...NO_REPORT, asked: rows.length };
    await inParallel(rows, this.concurrency, (row) => this.settleOne(token, row, report));
    return report;
  }

  private async settleOne(token: number, row: ClaimRow, report: ReconcileReport): Promise<void> {
    const type = this.types.get(row.effect_type)!;
    const effect: UnsettledEffect = {
      key: row.key,
      eventId: row.event_id,
      effectType: row.effect_type,
      state: row.state,
      reservedAt: row.reserved_at,
      checks: row.checks + 1,
      error: row.error,
    };
    let answer: ReconcileAnswer;
    try {
      answer = checkAnswer(await type.reconcile(row.key, effect));
    } catch (err) {
      answer = { status: 'unknown', reason: `asking the provider failed: ${message(err)}` };
    }
    if (answer.status === 'happened') {
      return this.count(report, 'happened', await this.settle(token, type, row.key, 'done', answer.result, null));
    }
    if (answer.status === 'did-not-happen') {
      if (type.whenNotHappened === 'release') {
        const { rowCount } = await this.db.query(this.sql.release, [row.key, token]);
        return this.count(report, 'released', rowCount === 1);
      }
      if (type.whenNotHappened === 'fail') {
        return this.count(report, 'failed', await this.settle(token, type, row.key, 'failed', null, 'the provider confirmed it did not happen'));
      }
      return this.redo(token, type, effect, report);
    }
    const reason = answer.reason ?? 'the provider could not say whether it happened';
    if (row.past_deadline) return this.deadline(token, type, effect, reason, report);
    const { rowCount } = await this.db.query(this.sql.later, [row.key, token, reason, backoffMs(type.backoff, effect.checks), type.reviewAfterMs, 0]);
    this.count(report, 'unknown', rowCount === 1);
  }

  /** "Did not happen", under `redo`: the reservation is the reconciler's, then the call, then its outcome. */
  private async redo(token: number, type: ResolvedEffectType, effect: UnsettledEffect, report: ReconcileReport): Promise<void> {
    const { rowCount } = await this.db.query(this.sql.redo, [effect.key, token, type.settleMs]);
    if (rowCount !== 1) return this.count(report, 'redone', false);
    let result: unknown;
    try {
      result = await type.redo!(effect.key, effect);
    } catch (err) {
      if (err instanceof EffectDeclinedError) {
        return this.count(report, 'failed', await this.settle(token, type, effect.key, 'failed', null, message(err)));
      }
      // Ambiguous again: asked after the backoff, not before the settle time (its call may still be on its way).
      const { rowCount: later } = await this.db.query(this.sql.later, [effect.key, token, `performing it again failed: ${message(err)}`, backoffMs(type.backoff, effect.checks), type.reviewAfterMs, type.settleMs]);
      return this.count(report, 'unknown', later === 1);
    }
    this.count(report, 'redone', await this.settle(token, type, effect.key, 'done', result ?? null, null));
  }

  /** Unknown past the business deadline: void with the same key where allowed, else review. */
  private async deadline(token: number, type: ResolvedEffectType, effect: UnsettledEffect, reason: string, report: ReconcileReport): Promise<void> {
    if (type.voidOnDeadline) {
      let voided = false;
      try {
        voided = await type.voidOnDeadline(effect.key, effect);
      } catch {
        voided = false;
      }
      if (voided) return this.count(report, 'failed', await this.settle(token, type, effect.key, 'failed', null, 'voided with the same key at the business deadline'));
    }
    this.count(report, 'review', await this.settle(token, type, effect.key, 'needs-review', null, `past the business deadline: ${reason}`));
  }

  private async settle(token: number, type: ResolvedEffectType, key: string, state: SettledEffect['state'], result: unknown, error: string | null): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<SettledRow>(this.sql.settle, [key, token, state, JSON.stringify(result ?? null), error]);
      const row = rows[0];
      if (!row) return false;
      await type.onSettled?.(tx, { key: row.key, eventId: row.event_id, effectType: row.effect_type, state: row.state, result: row.result, error: row.error });
      return true;
    });
  }

  private count(report: ReconcileReport, outcome: Exclude<keyof ReconcileReport, 'asked' | 'settledMeanwhile'>, applied: boolean): void {
    if (applied) report[outcome]++;
    else report.settledMeanwhile++;
  }
}

/**
 * Reconciles until no claimable effect is left (or one pass with `once`), as its own runner: it
 * holds a liveness lock for the duration, so a reconciler that dies frees its rows at once.
 *
 * @example
 * ```ts
 * const report = await reconcileEffects(store, { types: { 'notify-seller': notifySeller } })
 * console.log(report.happened, 'confirmed,', report.review, 'to review')
 * ```
 */
export async function reconcileEffects(
  store: EventStore<any>,
  options: ReconcilerOptions & { once?: boolean; onPass?: (report: ReconcileReport) => void },
): Promise<ReconcileReport> {
  const reconciler = new Reconciler(store, options);
  const runner = await openRunnerSession(store.db, processingSql(quoteSchema(store.schema)));
  try {
    let total = { ...NO_REPORT };
    for (;;) {
      const report = await reconciler.pass(runner.token);
      total = addReports(total, report);
      options.onPass?.(report);
      // A full pass may have left more; a short one took all there was. Rows just put off by a
      // backoff are not claimable again, so this ends.
      if (options.once || report.asked < (options.limit ?? 100)) return total;
    }
  } finally {
    await runner.close();
  }
}

export interface ReconcileLoop {
  /** Totals since the loop started. */
  readonly report: ReconcileReport;
  stop(): Promise<void>;
}

/**
 * Reconciles every `intervalMs` until stopped (serve runs one for charges and loaded processors).
 * A failed pass is reported to `onError` and retried after a growing backoff.
 */
export async function startReconcileLoop(
  store: EventStore<any>,
  options: ReconcilerOptions & { intervalMs?: number; onError?: (err: unknown) => void; onPass?: (report: ReconcileReport) => void },
): Promise<ReconcileLoop> {
  const reconciler = new Reconciler(store, options);
  const intervalMs = options.intervalMs ?? 10_000;
  const runner = await openRunnerSession(store.db, processingSql(quoteSchema(store.schema)));
  const wake = new WakeUp();
  let stopped = false;
  let total = { ...NO_REPORT };
  let failures = 0;
  const loop = (async () => {
    while (!stopped) {
      try {
        // After an outage the liveness session may be gone: a new one, with a new token, first.
        if (failures > 0 || runner.lost) await runner.renew();
        const report = await reconciler.pass(runner.token);
        total = addReports(total, report);
        if (report.asked > 0) options.onPass?.(report);
        failures = 0;
        // A full pass: go on at once.
        if (report.asked >= (options.limit ?? 100)) continue;
      } catch (err) {
        failures++;
        options.onError?.(err);
      }
      await wake.sleep(failures === 0 ? intervalMs : Math.min(60_000, intervalMs * 2 ** Math.min(failures, 6)), { backoff: failures > 0 });
    }
  })();
  return {
    get report() {
      return total;
    },
    async stop() {
      stopped = true;
      wake.stop();
      await loop;
      await runner.close();
    },
  };
}
