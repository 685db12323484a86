import type { Queryable } from '../db/database.js';
import { ValidationError } from '../errors.js';
import type { RecordedEvent } from '../store/event.js';
import type { AnyEvents, EventMap, EventTypes } from '../store/event-types.js';
import { resolveEffectType, type EffectType, type EffectTypes } from './ledger/effect-type.js';

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

/** What a handler gets besides its event. `Effect` is the processor's declared effect types. */
export interface HandlerContext<Effect extends string = string> {
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
  effect<Result>(effectType: Effect, call: (idempotencyKey: string) => Promise<Result>): Promise<EffectOutcome<Result>>;
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

/** A handler of events of type `K`, with the processor's effect types. */
export type EventHandler<E extends EventMap = AnyEvents, K extends keyof E & string = keyof E & string, Effect extends string = string> = (
  event: RecordedEvent<E, K>,
  ctx: HandlerContext<Effect>,
) => Promise<void>;

/** A handler per event type, each typed by its key. */
export type EventHandlers<E extends EventMap = AnyEvents, Effect extends string = string> = { [K in keyof E & string]?: EventHandler<E, K, Effect> };

/**
 * The effect types a processor's handlers ask for: their names, or their names with how
 * reconciliation asks their provider ({@link EffectType}; `{}` for one whose provider cannot say).
 */
export type EffectDeclarations<Effect extends string = string> = readonly Effect[] | { readonly [K in Effect]: EffectType | Record<string, never> };

/** A processor: a name, a handler per event type, and the effect types its handlers ask for. */
export interface Processor<E extends EventMap = AnyEvents, Effect extends string = string> {
  readonly name: string;
  readonly handlers: Readonly<EventHandlers<E, Effect>>;
  /** Its event types, when it declares them: they decode its events (upcasters) before the store's. */
  readonly events?: EventTypes<E>;
  /**
   * The effect types its handlers ask for, when it declares them: a run then refuses, before it
   * reads an event, a policy that names another type or has no rule for one of these, and a
   * handler's request for a type not declared parks its event. Undeclared, nothing is checked.
   */
  readonly effectTypes?: readonly Effect[];
  /** Effect types that can ask their provider "did key K happen?": reconciliation settles them. */
  readonly effects?: EffectTypes;
}

/** What {@link defineProcessor} takes. */
export interface ProcessorDefinition<E extends EventMap, Effect extends string> {
  /** 1 to 100 lowercase letters, digits, dots, dashes or underscores. */
  name: string;
  /** The events it handles, typed ({@link defineEvents}); without, handlers get untyped events. */
  events?: EventTypes<E>;
  /** The effect types its handlers ask for (see {@link Processor.effectTypes}). */
  effects?: EffectDeclarations<Effect>;
  /** A handler per event type. With `events`, each key must be one of them. Its types come from `events` and `effects`, never from the handlers. */
  handlers: NoInfer<EventHandlers<E, Effect>>;
}

const NAME = /^[a-z0-9][a-z0-9_.-]{0,99}$/;

/** The declared effect types, and those of them that can be reconciled. */
function declaredEffects(effects: unknown): { names: string[]; reconcilable: EffectTypes | undefined } {
  if (Array.isArray(effects)) {
    const names = effects.map((name, i) => {
      if (typeof name !== 'string' || name.length === 0 || name.length > 200) throw new ValidationError(`effects[${i}]`, 'must be an effect type name of 1 to 200 characters');
      return name;
    });
    if (new Set(names).size !== names.length) throw new ValidationError('effects', 'must not name an effect type twice');
    return { names, reconcilable: undefined };
  }
  if (typeof effects !== 'object' || effects === null) throw new ValidationError('effects', 'must be a list of effect types, or map each to its reconcile definition');
  const reconcilable: Record<string, EffectType> = {};
  for (const [type, definition] of Object.entries(effects)) {
    if (typeof definition === 'object' && definition !== null && Object.keys(definition).length === 0) continue;
    resolveEffectType(type, definition as EffectType);
    reconcilable[type] = definition as EffectType;
  }
  return { names: Object.keys(effects), reconcilable: Object.keys(reconcilable).length > 0 ? reconcilable : undefined };
}

/**
 * Defines a processor. Handlers must reach the outside world only through `ctx.effect` and write
 * state only through `ctx.upsert` or `ctx.tx`, so live runs and replays can share them.
 *
 * With `events`, handlers are typed by their keys and a key that is not one of the events is a
 * compile error; with `effects`, `ctx.effect` takes only those types and a run's policy must
 * have a rule for each of them, and for nothing else.
 *
 * @example
 * ```ts
 * const commissions = defineProcessor({
 *   name: 'commissions',
 *   events,                      // defineEvents<OrderEvents>({ 'order.paid': {} })
 *   effects: ['notify-seller'],
 *   handlers: {
 *     'order.paid': async (event, ctx) => {
 *       const cents = Math.round((event.data.amountCents * event.data.percent) / 100)
 *       await ctx.upsert('commission', event.streamId, { cents }, { version: event.streamVersion })
 *       await ctx.effect('notify-seller', (key) => notifier.send({ cents }, key))
 *     },
 *   },
 * })
 * ```
 */
export function defineProcessor<E extends EventMap = AnyEvents, const Effect extends string = string>(definition: ProcessorDefinition<E, Effect>): Processor<E, Effect> {
  if (typeof definition?.name !== 'string' || !NAME.test(definition.name)) {
    throw new ValidationError('name', 'must be 1 to 100 lowercase letters, digits, dots, dashes or underscores');
  }
  const handlers = definition.handlers;
  if (typeof handlers !== 'object' || handlers === null || Object.keys(handlers).length === 0) {
    throw new ValidationError('handlers', 'must map at least one event type to a function');
  }
  const { events } = definition;
  for (const [type, handler] of Object.entries(handlers)) {
    if (typeof handler !== 'function') throw new ValidationError(`handlers.${type}`, 'must be a function');
    if (events && !events.has(type)) throw new ValidationError(`handlers.${type}`, `is not one of the processor's event types (${events.names.join(', ')})`);
  }
  const declared = definition.effects === undefined ? undefined : declaredEffects(definition.effects);
  return Object.freeze({
    name: definition.name,
    handlers: Object.freeze({ ...handlers }) as EventHandlers<E, Effect>,
    ...(events ? { events } : {}),
    ...(declared ? { effectTypes: Object.freeze(declared.names) as readonly Effect[] } : {}),
    ...(declared?.reconcilable ? { effects: Object.freeze(declared.reconcilable) } : {}),
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
