import type { Queryable } from '../db/database.js';
import { ValidationError } from '../errors.js';
import type { RecordedEvent } from '../store/event.js';
import { resolveEffectType, type EffectTypes } from './ledger/effect-type.js';

/** How an effect call ended for the handler that asked for it. */
export type EffectOutcome<Result = unknown> =
  | { status: 'applied'; result: Result }
  | { status: 'already-recorded' }
  | { status: 'suppressed' }
  | { status: 'would-apply' }
  | { status: 'uncertain'; error: string };

/**
 * The guard of a state write: the event's aggregate version, or the source's observation time.
 * `observedAt: null` (the source did not say) applies and keeps the stored observation.
 */
export type UpsertGuard = { version: number } | { observedAt: Date | null };

/** What a handler gets besides its event. */
export interface HandlerContext {
  /** `live:<processor name>` for the live run (`live:commissions`), the replay's id otherwise. */
  readonly runId: string;
  readonly mode: 'live' | 'replay';
  /** True when the run only computes what it would do: no state writes, no effects. */
  readonly simulate: boolean;
  /**
   * The only way to touch the outside world. `call` receives the effect's idempotency key
   * (`<event id>:<effect type>`) to pass on to the provider. The run's policy decides whether it
   * runs; the effect ledger makes sure it runs at most once per key.
   */
  effect<Result>(effectType: string, call: (idempotencyKey: string) => Promise<Result>): Promise<EffectOutcome<Result>>;
  /**
   * Writes `doc` at `projection`/`key` unless the stored row was written at a newer version (or
   * a later observation, truncated to the second; ties apply; a null observation on either side
   * applies and the stored one is kept). Resolves to whether it applied.
   */
  upsert(projection: string, key: string, doc: Record<string, unknown>, guard: UpsertGuard): Promise<boolean>;
  /**
   * Custom SQL in the transaction that commits the batch's state and checkpoint. Statements run
   * when the batch commits; ask for effects before awaiting one.
   */
  readonly tx: Queryable;
}

export type EventHandler = (event: RecordedEvent, ctx: HandlerContext) => Promise<void>;

/** A processor: a name, a handler per event type, and the effect types whose providers can be asked. */
export interface Processor {
  readonly name: string;
  readonly handlers: Readonly<Record<string, EventHandler>>;
  /** Effect types that can ask their provider "did key K happen?": reconciliation settles them. */
  readonly effects?: EffectTypes;
}

const NAME = /^[a-z0-9][a-z0-9_.-]{0,99}$/;

/**
 * Defines a processor. Handlers must reach the outside world only through `ctx.effect` and write
 * state only through `ctx.upsert` or `ctx.tx`, so live runs and replays can share them.
 *
 * @example
 * ```ts
 * const commissions = defineProcessor({
 *   name: 'commissions',
 *   handlers: {
 *     'order.paid': async (event, ctx) => {
 *       const cents = Math.round((event.data.amountCents as number) * (event.data.percent as number) / 100)
 *       await ctx.upsert('commission', event.streamId, { cents }, { version: event.streamVersion })
 *       await ctx.effect('notify-seller', (key) => notifier.send({ cents }, key))
 *     },
 *   },
 * })
 * ```
 */
export function defineProcessor(definition: { name: string; handlers: Record<string, EventHandler>; effects?: EffectTypes }): Processor {
  if (typeof definition?.name !== 'string' || !NAME.test(definition.name)) {
    throw new ValidationError('name', 'must be 1 to 100 lowercase letters, digits, dots, dashes or underscores');
  }
  const handlers = definition.handlers;
  if (typeof handlers !== 'object' || handlers === null || Object.keys(handlers).length === 0) {
    throw new ValidationError('handlers', 'must map at least one event type to a function');
  }
  for (const [type, handler] of Object.entries(handlers)) {
    if (typeof handler !== 'function') throw new ValidationError(`handlers.${type}`, 'must be a function');
  }
  const effects = definition.effects;
  if (effects !== undefined) {
    if (typeof effects !== 'object' || effects === null) throw new ValidationError('effects', 'must map effect types to their reconcile definitions');
    for (const [type, definition] of Object.entries(effects)) resolveEffectType(type, definition);
  }
  return Object.freeze({
    name: definition.name,
    handlers: Object.freeze({ ...handlers }),
    ...(effects ? { effects: Object.freeze({ ...effects }) } : {}),
  });
}

/** The effect ledger key: the same for live runs and replays. */
export function effectKey(eventId: string, effectType: string): string {
  return `${eventId}:${effectType}`;
}

/**
 * Thrown by an effect's call to say the provider certainly did not receive it (for example the
 * connection was refused). The reservation is released even under `keep`, and the event retried.
 */
export class EffectNotAttemptedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EffectNotAttemptedError';
  }
}
