import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.js';

/**
 * The provider's payment statuses an order snapshot may carry. `partial`: part of the amount was
 * paid; `received`: paid in full.
 *
 * @example
 * ```ts
 * ORDER_STATUSES.includes(body.status)
 * ```
 */
export const ORDER_STATUSES = ['requested', 'partial', 'received', 'cancelled', 'refunded', 'expired'] as const;

export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** How a snapshot reached us: a webhook the provider sent, or a REST page we fetched. */
export type SnapshotChannel = 'webhook' | 'rest';

/** A provider's snapshot of one order, validated: what the raw snapshot event holds. */
export interface OrderSnapshot {
  source: string;
  channel: SnapshotChannel;
  orderId: string;
  status: OrderStatus;
  /** The provider's own `lastUpdate` as an ISO instant (milliseconds, UTC); null when it sent none. */
  lastUpdate: string | null;
  /** `lastUpdate` exactly as the provider wrote it. */
  lastUpdateText: string | null;
  /** Everything else the provider sent (invoice, customer, …), kept as it came. */
  payload: Record<string, unknown>;
}

/** The longest provider name (`pied`), and the longest order id a provider may send. */
export const MAX_SOURCE_LENGTH = 40;
export const MAX_ORDER_ID_LENGTH = 64;
/** `<source>:<orderId>`, the id of an order in the API. */
export const MAX_ORDER_KEY_LENGTH = MAX_SOURCE_LENGTH + 1 + MAX_ORDER_ID_LENGTH;
const SOURCE = new RegExp(`^[a-z0-9][a-z0-9_-]{0,${MAX_SOURCE_LENGTH - 1}}$`);
const ORDER_ID = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${MAX_ORDER_ID_LENGTH - 1}}$`);

/**
 * ISO 8601 / RFC 3339 date-time with any fraction of a second and a required offset (`Z`,
 * `±hh:mm`, `±hhmm` or `±hh`): a time without an offset names no instant.
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;

/**
 * Parses a provider's `lastUpdate` at any precision and offset to the instant it names, e.g.
 * `2026-09-08T11:54:24.512Z` and `2026-09-08T08:54:24-03:00`. Beyond milliseconds the fraction
 * is cut (the recency guard compares whole seconds). Throws {@link ValidationError} otherwise.
 *
 * @example
 * ```ts
 * parseLastUpdate('2026-09-08T08:54:24-03:00').toISOString() // '2026-09-08T11:54:24.000Z'
 * ```
 */
export function parseLastUpdate(text: string, field = 'lastUpdate'): Date {
  const match = DATE_TIME.exec(text);
  const invalid = () => new ValidationError(field, `is not a date-time with an offset: ${JSON.stringify(text.slice(0, 40))} (use ISO 8601, e.g. 2026-09-08T08:54:24-03:00)`);
  if (!match) throw invalid();
  const [, y, mo, d, h, mi, s, fraction = '', zulu, sign, oh = '00', om = '00'] = match;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  const ms = Number(fraction.padEnd(3, '0').slice(0, 3));
  const offsetMinutes = zulu ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const local = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  const check = new Date(local);
  const calendarOk = check.getUTCFullYear() === year && check.getUTCMonth() === month - 1 && check.getUTCDate() === day;
  if (!calendarOk || hour > 23 || minute > 59 || second > 59 || Number(oh) > 23 || Number(om) > 59) throw invalid();
  return new Date(local - offsetMinutes * 60_000);
}

export function validateSource(source: unknown): string {
  if (typeof source !== 'string' || !SOURCE.test(source)) throw new ValidationError('source', 'must be 1 to 40 lowercase letters, digits, dashes or underscores');
  return source;
}

export function validateOrderId(orderId: unknown, field = 'orderId'): string {
  const text = typeof orderId === 'number' && Number.isSafeInteger(orderId) && orderId >= 0 ? String(orderId) : orderId;
  if (typeof text !== 'string' || !ORDER_ID.test(text)) throw new ValidationError(field, 'must be 1 to 64 letters, digits, dots, dashes or underscores (or a non-negative integer)');
  return text;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const MAX_DEPTH = 32;

/** Whether a JSON value nests deeper than `MAX_DEPTH`: hashing and storing it would recurse that deep. */
function tooDeep(value: unknown, depth = 0): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (depth >= MAX_DEPTH) return true;
  return (Array.isArray(value) ? value : Object.values(value)).some((item) => tooDeep(item, depth + 1));
}

/**
 * Validates a snapshot as the provider sent it: `orderId`, `status` (one of
 * {@link ORDER_STATUSES}), `lastUpdate` (optional), anything else kept as the payload.
 *
 * @example
 * ```ts
 * const snapshot = parseOrderSnapshot('pied', 'webhook', { orderId: '260074525', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z' })
 * ```
 */
export function parseOrderSnapshot(source: string, channel: SnapshotChannel, body: unknown): OrderSnapshot {
  validateSource(source);
  if (!isPlainObject(body)) throw new ValidationError('body', 'must be a JSON object');
  const { orderId, status, lastUpdate, ...payload } = body;
  if (typeof status !== 'string' || !(ORDER_STATUSES as readonly string[]).includes(status)) {
    throw new ValidationError('status', `must be one of ${ORDER_STATUSES.join(', ')}`);
  }
  if (lastUpdate !== undefined && lastUpdate !== null && typeof lastUpdate !== 'string') throw new ValidationError('lastUpdate', 'must be a date-time string or null');
  if (tooDeep(payload, 1)) throw new ValidationError('body', `must not nest deeper than ${MAX_DEPTH} levels`);
  const lastUpdateText = typeof lastUpdate === 'string' ? lastUpdate : null;
  return {
    source,
    channel,
    orderId: validateOrderId(orderId),
    status: status as OrderStatus,
    lastUpdate: lastUpdateText === null ? null : parseLastUpdate(lastUpdateText).toISOString(),
    lastUpdateText,
    payload,
  };
}

/** JSON with object keys sorted, so the same content always hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    return `{${Object.keys(value).sort().filter((key) => value[key] !== undefined).map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The raw snapshot's event id: a name-based UUID (version 5 layout, SHA-256) of everything the
 * provider said, so a redelivery of the same snapshot by the same channel is the same event and
 * the store keeps it once. The capture time is left out on purpose.
 */
export function snapshotEventId(snapshot: OrderSnapshot): string {
  const { source, channel, orderId, status, lastUpdateText, payload } = snapshot;
  const hash = createHash('sha256').update(canonicalJson({ source, channel, orderId, status, lastUpdateText, payload })).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The event stream of one order: `order:<source>:<orderId>`.
 *
 * @example
 * ```ts
 * await store.readStream(orderStreamId('pied', '260065713')) // its raw snapshots and import outcomes
 * ```
 */
export function orderStreamId(source: string, orderId: string): string {
  return `order:${source}:${orderId}`;
}

/**
 * The normalized order's key (and the id in `/orders/{id}`): `<source>:<orderId>`.
 *
 * @example
 * ```ts
 * await projections(store).get(ORDER_PROJECTION, orderKey('pied', '260065713'))
 * ```
 */
export function orderKey(source: string, orderId: string): string {
  return `${source}:${orderId}`;
}

/** Splits an order key `<source>:<orderId>` back; throws {@link ValidationError} on anything else. */
export function parseOrderKey(key: unknown): { source: string; orderId: string } {
  const text = typeof key === 'string' ? key : '';
  const colon = text.indexOf(':');
  if (colon < 0) throw new ValidationError('id', 'must be <source>:<orderId>, e.g. pied:260065713');
  return { source: validateSource(text.slice(0, colon)), orderId: validateOrderId(text.slice(colon + 1), 'id') };
}
