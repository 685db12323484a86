import type { RecordedEvent, RecordedEventFields, StoredEvent } from './event.js';
import type { AnyEvents, EventMap, EventTypes } from './event-types.js';

/**
 * The one decode of an event read from the log. Every read path goes through it: `readStream`,
 * `readAll`, `subscribe`, live runs and replays (simulate too), the relay's log source, the
 * account ledger and the audit. It brings the event's data from the version it was appended at
 * to its type's current version through the declared upcasters; the stored row never changes.
 * A version no upcaster chain reaches throws {@link EventVersionError}; an upcaster that fails
 * throws {@link UpcastError}: a run parks the event with that reason, a read fails with it.
 */
export function decodeEvent<E extends EventMap = AnyEvents>(stored: StoredEvent, types: EventTypes | undefined): RecordedEvent<E> {
  const data = decodeData(stored, types);
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
export function decodeData(stored: StoredData, types: EventTypes | undefined): Record<string, unknown> {
  if (types === undefined || types.isCurrent(stored.type, stored.schemaVersion)) return stored.data;
  return types.upcast(stored, stored.schemaVersion) as Record<string, unknown>;
}
