import type { Queryable } from '../../db/database.js';
import { ValidationError } from '../../errors.js';

/** What a provider says about a key: it happened (with its result), it did not, or it cannot say. */
export type ReconcileAnswer =
  | { status: 'happened'; result?: unknown }
  | { status: 'did-not-happen' }
  | { status: 'unknown'; reason?: string };

/** An unsettled effect as the reconciler hands it to its type. */
export interface UnsettledEffect {
  key: string;
  /** The event that asked for it; null for an effect made on a request's path (a charge). */
  eventId: string | null;
  effectType: string;
  state: 'reserved' | 'uncertain';
  reservedAt: Date;
  /** Questions asked so far, this one included. */
  checks: number;
  error: string | null;
}

/** An effect the reconciler just settled, in the transaction that settles it. */
export interface SettledEffect {
  key: string;
  eventId: string | null;
  effectType: string;
  state: 'done' | 'failed' | 'needs-review';
  result: unknown;
  error: string | null;
}

/**
 * Thrown by a call (a capture, a redo) when the provider answered that it did not and will not do
 * it, for example a declined card: the effect is `failed`, with the provider's confirmation.
 */
export class EffectDeclinedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EffectDeclinedError';
  }
}

/**
 * An effect type that can ask its provider what happened to a key. The effect ledger settles its
 * abandoned and uncertain entries by the provider's answer, never by a guess.
 *
 * @example
 * ```ts
 * const notifySeller: EffectType = {
 *   reconcile: async (key) => ((await notifier.lookup(key)) ? { status: 'happened' } : { status: 'did-not-happen' }),
 *   settleMs: 30_000, // the call's timeout, with room to spare
 * }
 * ```
 */
export interface EffectType {
  /** Asks the provider about `key`. A throw counts as `unknown`. */
  reconcile(key: string, effect: UnsettledEffect): Promise<ReconcileAnswer>;
  /**
   * A call may still reach the provider this long after it was made (its timeout, with room to
   * spare): the reconciler asks no earlier, so "did not happen" is final. @defaultValue 60 s
   */
  settleMs?: number;
  /**
   * What a confirmed "did not happen" does. `release` removes the entry, so the next run that
   * reaches the event performs it; `fail` records `failed`; `redo` performs it again now with
   * the same key, through the ledger (for effects made on a request's path, which no run will
   * reach again; needs {@link EffectType.redo}). @defaultValue 'release'
   */
  whenNotHappened?: 'release' | 'fail' | 'redo';
  /** Performs the effect again with the same key. Throws {@link EffectDeclinedError} for a refusal. */
  redo?(key: string, effect: UnsettledEffect): Promise<unknown>;
  /** How long after the reservation "unknown" stops being asked again: then the deadline rule. @defaultValue 24 h */
  reviewAfterMs?: number;
  /**
   * The deadline rule instead of review, where the provider allows it: cancel with the same key.
   * Resolves true when the provider confirmed the cancellation (the effect is then `failed`).
   */
  voidOnDeadline?(key: string, effect: UnsettledEffect): Promise<boolean>;
  /** The backoff between questions answered "unknown". @defaultValue 5 s doubling to 10 min */
  backoff?: { initialMs: number; maxMs: number };
  /** Writes in the transaction that settles an entry (a charge writes its outbox event here). */
  onSettled?(tx: Queryable, effect: SettledEffect): Promise<void>;
  /**
   * The ledger keys the provider has seen since `since`, for providers that can list them:
   * `rastro audit --ask-providers` reports each key the ledger lacks (an effect whose record a
   * database failover lost), so that nobody performs it again blindly.
   */
  listKeys?(since: Date): AsyncIterable<string>;
}

/** An effect type with its defaults applied. */
export interface ResolvedEffectType extends EffectType {
  settleMs: number;
  whenNotHappened: 'release' | 'fail' | 'redo';
  reviewAfterMs: number;
  backoff: { initialMs: number; maxMs: number };
}

export type EffectTypes = Readonly<Record<string, EffectType>>;

function duration(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new ValidationError(field, 'must be a number of milliseconds, 0 or more');
  return value;
}

/** Checks an effect type's definition and fills in its defaults. */
export function resolveEffectType(name: string, type: EffectType): ResolvedEffectType {
  if (typeof type?.reconcile !== 'function') throw new ValidationError(`effects.${name}.reconcile`, 'must be a function (key) → answer');
  const whenNotHappened = type.whenNotHappened ?? 'release';
  if (!['release', 'fail', 'redo'].includes(whenNotHappened)) throw new ValidationError(`effects.${name}.whenNotHappened`, "must be 'release', 'fail' or 'redo'");
  if (type.listKeys !== undefined && typeof type.listKeys !== 'function') throw new ValidationError(`effects.${name}.listKeys`, 'must be a function (since) → keys');
  if (whenNotHappened === 'redo' && typeof type.redo !== 'function') throw new ValidationError(`effects.${name}.redo`, "must be a function when whenNotHappened is 'redo'");
  const initialMs = duration(`effects.${name}.backoff.initialMs`, type.backoff?.initialMs, 5_000);
  const maxMs = duration(`effects.${name}.backoff.maxMs`, type.backoff?.maxMs, 10 * 60_000);
  return {
    ...type,
    whenNotHappened,
    settleMs: duration(`effects.${name}.settleMs`, type.settleMs, 60_000),
    reviewAfterMs: duration(`effects.${name}.reviewAfterMs`, type.reviewAfterMs, 24 * 3_600_000),
    backoff: { initialMs: Math.max(1, initialMs), maxMs: Math.max(initialMs, maxMs) },
  };
}

/** The wait before asking again after `checks` questions: doubling from `initialMs` up to `maxMs`. */
export function backoffMs(backoff: { initialMs: number; maxMs: number }, checks: number): number {
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(30, Math.max(0, checks - 1)));
}
