import type { Queryable } from '../db/database.js';
import type { RecordedEvent, RecordedEventFields, StoredEvent } from './event.js';
import type { AnyEvents, EventMap, EventTypes } from './event-types.js';
import { decryptPersonal, envelopeSubjects, type SubjectKeys } from './personal-data.js';

/**
 * What decodes a store's events: its declared types (upcasters), and the keys of its data
 * subjects (personal fields). A store without either reads events as they are stored.
 */
export interface EventDecoder {
  readonly types?: EventTypes;
  readonly keys?: SubjectKeys;
}

/** The keys a batch needs, by subject: those of the subjects whose personal fields its data holds. */
export type BatchKeys = ReadonlyMap<string, Buffer> | undefined;

const NONE: BatchKeys = new Map();

/**
 * Loads, in one query, the keys of the data subjects whose personal fields `data` holds: the
 * step before {@link decodeEvent} on every read path. Undefined when the store has no keys (its
 * events carry no personal fields to open).
 */
export async function keysFor(decoder: EventDecoder, data: Iterable<unknown>, target?: Queryable): Promise<BatchKeys> {
  if (!decoder.keys) return undefined;
  const subjects = new Set<string>();
  for (const item of data) envelopeSubjects(item, subjects);
  return subjects.size === 0 ? NONE : decoder.keys.load(subjects, target);
}

/**
 * The one decode of an event read from the log. Every read path goes through it: `readStream`,
 * `readAll`, `subscribe`, live runs and replays (simulate too), the relay's log source, the
 * account ledger and the audit. It opens the event's personal fields with its subject's key
 * (null once the subject was forgotten), then brings its data from the version it was appended
 * at to its type's current version through the declared upcasters; the stored row never
 * changes. A version no upcaster chain reaches throws {@link EventVersionError}; an upcaster
 * that fails throws {@link UpcastError}: a run parks the event with that reason, a read fails with it.
 */
export function decodeEvent<E extends EventMap = AnyEvents>(stored: StoredEvent, decoder: EventDecoder, keys: BatchKeys): RecordedEvent<E> {
  const data = decodeData(stored, decoder, keys);
  const event: RecordedEventFields & { type: string; data: object } = {
    id: stored.id,
    streamId: stored.streamId,
    streamVersion: stored.streamVersion,
    position: stored.position,
    txOrder: stored.txOrder,
    type: stored.type,
    data,
    metadata: stored.metadata,
    occurredAt: stored.occurredAt,
    recordedAt: stored.recordedAt,
  };
  return event as RecordedEvent<E>;
}

/** What {@link decodeData} reads of a stored event. */
export type StoredData = Pick<StoredEvent, 'id' | 'type' | 'streamId' | 'occurredAt' | 'data' | 'schemaVersion'>;

/**
 * The data of a stored event as handlers and readers see it: the part of {@link decodeEvent}
 * that a path reading only some of an event's columns (a stream's tail for a fold) calls.
 */
export function decodeData(stored: StoredData, decoder: EventDecoder, keys: BatchKeys): Record<string, unknown> {
  const { types } = decoder;
  const data = keys === undefined || keys === NONE ? stored.data : (decryptPersonal(stored.data, keys) as Record<string, unknown>);
  if (types === undefined || types.isCurrent(stored.type, stored.schemaVersion)) return data;
  return types.upcast({ ...stored, data }, stored.schemaVersion) as Record<string, unknown>;
}
