import { randomUUID } from 'node:crypto';
import { ValidationError, type ExpectedVersion } from '../errors.js';
import type { NewEvent } from './event.js';
import type { EventTypes } from './event-types.js';
import { findUnstorableText } from './storable-text.js';

export const MAX_STREAM_ID_LENGTH = 500;
export const MAX_TYPE_LENGTH = 200;
/** An event or message id as the store takes it: a UUID, in either case. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An event checked and serialized, ready for the append statement. */
export interface PreparedEvent {
  id: string;
  type: string;
  data: string;
  metadata: string;
  occurredAt: string;
  /** Whether the caller set occurredAt, so a retry's default timestamp is not a difference. */
  occurredAtGiven: boolean;
  /** The version of its type the data is in: its type's current one. */
  schemaVersion: number;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function toJson(field: string, value: unknown): string {
  if (!isPlainObject(value)) throw new ValidationError(field, 'must be a JSON object');
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    throw new ValidationError(field, 'must be serializable as JSON (no cycles, no BigInt)');
  }
  const unstorable = findUnstorableText(value, field);
  if (unstorable) throw new ValidationError(unstorable.field, unstorable.reason);
  return text;
}

export function validateStreamId(streamId: unknown): string {
  if (typeof streamId !== 'string' || streamId.length === 0) throw new ValidationError('streamId', 'must be a non-empty string');
  if (streamId.length > MAX_STREAM_ID_LENGTH) throw new ValidationError('streamId', `must be at most ${MAX_STREAM_ID_LENGTH} characters`);
  return streamId;
}

export function validateExpectedVersion(expected: unknown): ExpectedVersion {
  if (expected === 'no-stream' || expected === 'exists' || expected === 'any') return expected;
  if (typeof expected === 'number' && Number.isSafeInteger(expected) && expected >= 0) return expected;
  throw new ValidationError('expectedVersion', "must be a non-negative integer, 'no-stream', 'exists' or 'any'");
}

function prepareEvent(event: NewEvent, index: number, now: Date, types: EventTypes | undefined): PreparedEvent {
  const at = `events[${index}]`;
  if (!isPlainObject(event)) throw new ValidationError(at, 'must be an object');
  const { id, type, data, metadata, occurredAt } = event;
  if (id !== undefined && (typeof id !== 'string' || !UUID.test(id))) throw new ValidationError(`${at}.id`, 'must be a UUID');
  if (typeof type !== 'string' || type.length === 0) throw new ValidationError(`${at}.type`, 'must be a non-empty string');
  if (type.length > MAX_TYPE_LENGTH) throw new ValidationError(`${at}.type`, `must be at most ${MAX_TYPE_LENGTH} characters`);
  if (occurredAt !== undefined && !(occurredAt instanceof Date && Number.isFinite(occurredAt.getTime()))) {
    throw new ValidationError(`${at}.occurredAt`, 'must be a valid Date');
  }
  if (occurredAt !== undefined && (occurredAt.getUTCFullYear() < 1 || occurredAt.getUTCFullYear() > 9999)) {
    // PostgreSQL reads the ISO 8601 form only for years 1 to 9999 (toISOString writes +010000-… beyond).
    throw new ValidationError(`${at}.occurredAt`, 'must be within years 0001 to 9999');
  }
  return {
    id: (id ?? randomUUID()).toLowerCase(),
    type,
    data: toJson(`${at}.data`, data),
    metadata: toJson(`${at}.metadata`, metadata ?? {}),
    occurredAt: (occurredAt ?? now).toISOString(),
    occurredAtGiven: occurredAt !== undefined,
    schemaVersion: types?.version(type) ?? 1,
  };
}

/** Checks a batch before anything touches the database; throws {@link ValidationError}. */
export function prepareEvents(events: unknown, types?: EventTypes): PreparedEvent[] {
  if (!Array.isArray(events) || events.length === 0) throw new ValidationError('events', 'must be a non-empty array');
  const now = new Date();
  const prepared = events.map((event: NewEvent, index) => prepareEvent(event, index, now, types));
  const ids = new Set(prepared.map((event) => event.id));
  if (ids.size !== prepared.length) throw new ValidationError('events', 'must not repeat an event id within one append');
  return prepared;
}
