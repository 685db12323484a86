import type { StandardSchemaV1 } from '@standard-schema/spec';
import { RastroError, ValidationError } from '../errors.js';
import type { PersonalFields } from './personal-data.js';

/**
 * Event types by name, each with the type of its data. Declare it as a type or an interface;
 * data types may be interfaces too.
 */
export type EventMap = { [type: string]: object };

/** The event map of a store or processor with no declared types: any type name, any JSON object. */
export type AnyEvents = Record<string, Record<string, unknown>>;

/** What an upcaster is told about the event whose data it turns into the next version. */
export interface UpcastContext {
  readonly id: string;
  readonly type: string;
  readonly streamId: string;
  /** The version of the data it is given. */
  readonly version: number;
  readonly occurredAt: Date;
}

/** Turns the data of one version of an event type into the data of the next version. */
// The data of an older version is whatever that version was: its type is the upcaster's to state.
export type Upcaster = (data: any, event: UpcastContext) => object;

/**
 * One event type: the schema its data is checked against when appended, its current version,
 * and an upcaster from each older version to the next.
 */
export interface EventDefinition<Data extends object = object> {
  /** A Standard Schema (zod, valibot, arktype…): appends of this type are checked against it. */
  schema?: StandardSchemaV1<unknown, Data>;
  /** The version appends are stamped with. Events stored before versions existed are version 1. @defaultValue 1 */
  version?: number;
  /** An upcaster from each version below `version` to the next one: `{ 1: (v1) => v2, 2: (v2) => v3 }`. */
  upcast?: { readonly [fromVersion: number]: Upcaster };
  /**
   * Fields that are personal data, and the field naming their data subject: stored encrypted
   * under the subject's key, so forgetting the subject erases them without touching the event
   * (the store needs `personalData.masterKey`). After that, they read as null.
   */
  personal?: PersonalFields;
}

type SchemaDefinition = StandardSchemaV1<unknown, object> | (EventDefinition & { schema: StandardSchemaV1<unknown, object> });
type DataOfSchema<D> = D extends StandardSchemaV1<unknown, infer O> ? O : D extends { schema: StandardSchemaV1<unknown, infer O> } ? O : never;

/** The event map a set of schemas describes. */
export type InferEvents<D> = { [K in keyof D]: DataOfSchema<D[K]> extends object ? DataOfSchema<D[K]> : never };

interface ResolvedType {
  version: number;
  schema: StandardSchemaV1<unknown, object> | undefined;
  upcast: ReadonlyMap<number, Upcaster>;
  personal: PersonalFields | undefined;
}

/** An event version no upcaster chain of this code turns into the current one. */
export class EventVersionError extends RastroError {
  readonly eventId: string;
  readonly eventType: string;
  readonly version: number;

  constructor(event: { id: string; type: string }, version: number, current: number) {
    super(
      'RASTRO_EVENT_VERSION',
      version > current
        ? `event ${event.id} of type ${event.type} is stored at version ${version}, newer than the ${current} this code reads: run the code that wrote it, or add its version`
        : `event ${event.id} of type ${event.type} is stored at version ${version}, and no upcaster turns it into version ${current}: add one`,
    );
    this.eventId = event.id;
    this.eventType = event.type;
    this.version = version;
  }
}

/** An upcaster threw, or returned something other than an object. */
export class UpcastError extends RastroError {
  constructor(event: { id: string; type: string }, from: number, reason: string, options?: { cause?: unknown }) {
    super('RASTRO_UPCAST', `the upcaster of ${event.type} from version ${from} failed on event ${event.id}: ${reason}`, options);
  }
}

function isSchema(value: unknown): value is StandardSchemaV1<unknown, object> {
  const standard = (value as StandardSchemaV1 | null)?.['~standard'];
  return typeof standard === 'object' && standard !== null && typeof standard.validate === 'function';
}

function resolveType(name: string, definition: unknown): ResolvedType {
  const at = `events.${name}`;
  if (isSchema(definition)) return { version: 1, schema: definition, upcast: new Map(), personal: undefined };
  if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) {
    throw new ValidationError(at, 'must be a Standard Schema or { schema?, version?, upcast? }');
  }
  const { schema, version = 1, upcast = {}, personal } = definition as EventDefinition;
  if (personal !== undefined) {
    const { subject, fields } = personal as Partial<PersonalFields>;
    if (typeof subject !== 'string' || subject.length === 0) throw new ValidationError(`${at}.personal.subject`, 'must name the field that holds the data subject\'s id');
    if (!Array.isArray(fields) || fields.length === 0 || fields.some((field) => typeof field !== 'string' || field.length === 0)) {
      throw new ValidationError(`${at}.personal.fields`, 'must list the personal fields (names or dot-separated paths)');
    }
    if (fields.some((field) => field === subject || subject.startsWith(`${field}.`))) throw new ValidationError(`${at}.personal.fields`, 'must not include the subject\'s field: it finds the key, so it stays in clear');
  }
  if (schema !== undefined && !isSchema(schema)) throw new ValidationError(`${at}.schema`, 'must be a Standard Schema (zod 3.24+, valibot, arktype…)');
  if (!Number.isSafeInteger(version) || version < 1 || version > 32_767) throw new ValidationError(`${at}.version`, 'must be an integer from 1 to 32767');
  if (typeof upcast !== 'object' || upcast === null) throw new ValidationError(`${at}.upcast`, 'must map each older version to a function');
  const chain = new Map<number, Upcaster>();
  for (const [from, fn] of Object.entries(upcast)) {
    const v = Number(from);
    if (!Number.isSafeInteger(v) || v < 1 || v >= version) throw new ValidationError(`${at}.upcast.${from}`, `names no version below the current ${version}`);
    if (typeof fn !== 'function') throw new ValidationError(`${at}.upcast.${from}`, `must be a function turning version ${v} data into version ${v + 1}`);
    chain.set(v, fn as Upcaster);
  }
  for (let v = 1; v < version; v++) {
    if (!chain.has(v)) throw new ValidationError(`${at}.upcast.${v}`, `is missing: version ${version} needs an upcaster from each older version to the next`);
  }
  return { version, schema, upcast: chain, personal: personal === undefined ? undefined : { subject: personal.subject, fields: [...personal.fields] } };
}

/** A Standard Schema issue's path as a field name: `amount`, `items[0].sku`. */
function issuePath(path: StandardSchemaV1.Issue['path']): string {
  let text = '';
  for (const segment of path ?? []) {
    const key = typeof segment === 'object' ? segment.key : segment;
    text += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  }
  return text;
}

/**
 * The event types a store or processor knows, defined once: their names, the schema each one's
 * data is checked against, the version each is appended at, and the upcasters that bring older
 * versions to it on every read. Make it with {@link defineEvents}.
 */
export class EventTypes<out E extends EventMap = EventMap> {
  /** Carries the event map for the compiler; nothing at run time. */
  declare readonly events?: E;
  private readonly types: ReadonlyMap<string, ResolvedType>;

  /** @internal Use {@link defineEvents}. */
  constructor(definitions: Record<string, unknown>) {
    if (typeof definitions !== 'object' || definitions === null || Array.isArray(definitions) || Object.keys(definitions).length === 0) {
      throw new ValidationError('events', 'must map at least one event type to its definition');
    }
    this.types = new Map(Object.entries(definitions).map(([name, definition]) => [name, resolveType(name, definition)]));
  }

  /** The declared type names. */
  get names(): string[] {
    return [...this.types.keys()];
  }

  has(type: string): boolean {
    return this.types.has(type);
  }

  /** The version appends of `type` are stamped with: 1 for a type it does not declare. */
  version(type: string): number {
    return this.types.get(type)?.version ?? 1;
  }

  /**
   * The data to store for an appended event: checked against its type's schema (the schema's
   * output is stored). Throws {@link ValidationError} naming the field, as `at` + its path.
   */
  async validate(type: string, data: object, at: string): Promise<object> {
    const schema = this.types.get(type)?.schema;
    if (!schema) return data;
    const result = await schema['~standard'].validate(data);
    if (result.issues) {
      const [issue] = result.issues;
      throw new ValidationError(`${at}${issuePath(issue?.path)}`, issue?.message ?? 'is not valid');
    }
    return result.value;
  }

  /** The personal fields of `type`, when it declares some. */
  personal(type: string): PersonalFields | undefined {
    return this.types.get(type)?.personal;
  }

  /** Whether any type declares personal fields. */
  get hasPersonal(): boolean {
    return [...this.types.values()].some((type) => type.personal !== undefined);
  }

  /** Whether events of `type` stored at `version` are read as they are. */
  isCurrent(type: string, version: number): boolean {
    const resolved = this.types.get(type);
    return resolved === undefined || resolved.version === version;
  }

  /** The data of a stored event, brought from its stored version to the current one. */
  upcast(event: { id: string; type: string; streamId: string; occurredAt: Date; data: object }, version: number): object {
    const resolved = this.types.get(event.type);
    if (!resolved || resolved.version === version) return event.data;
    if (version > resolved.version || version < 1) throw new EventVersionError(event, version, resolved.version);
    let data = event.data;
    for (let v = version; v < resolved.version; v++) {
      const upcaster = resolved.upcast.get(v);
      if (!upcaster) throw new EventVersionError(event, version, resolved.version);
      try {
        data = upcaster(data, { id: event.id, type: event.type, streamId: event.streamId, version: v, occurredAt: event.occurredAt });
      } catch (err) {
        throw new UpcastError(event, v, err instanceof Error ? err.message : String(err), { cause: err });
      }
      if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new UpcastError(event, v, 'it returned something other than an object');
    }
    return data;
  }
}

/**
 * Declares a store's or a processor's event types, once. From Standard Schemas (zod 3.24+,
 * valibot, arktype…), whose output types become the events' data types:
 *
 * ```ts
 * const events = defineEvents({
 *   'order.paid': z.object({ orderId: z.string(), amountCents: z.number().int() }),
 *   'order.refunded': { schema: refundedV2, version: 2, upcast: { 1: (v1) => ({ ...v1, reason: 'unknown' }) } },
 * })
 * ```
 *
 * Or from plain TypeScript types, with a definition per type (`{}` when it has nothing to say):
 *
 * ```ts
 * type OrderEvents = { 'order.paid': OrderPaid; 'order.refunded': OrderRefunded }
 * const events = defineEvents<OrderEvents>({ 'order.paid': {}, 'order.refunded': { version: 2, upcast: { 1: (v1: RefundedV1) => ({ ...v1, reason: 'unknown' }) } } })
 * ```
 *
 * Pass it to `createEventStore(db, { events })` and `defineProcessor({ events, … })`: appends,
 * reads and handlers are then typed, appends checked against the schemas and stamped with each
 * type's version, and every read brings older versions to the current one through the upcasters.
 */
export function defineEvents<const D extends Record<string, SchemaDefinition>>(definitions: D): EventTypes<InferEvents<D>>;
export function defineEvents<E extends EventMap>(definitions: { [K in keyof E]-?: EventDefinition<E[K]> }): EventTypes<E>;
export function defineEvents<E extends EventMap>(definitions: Record<string, unknown>): EventTypes<E> {
  return new EventTypes<E>(definitions);
}
