import { EventIdConflictError, OrderNotFoundError, ValidationError } from '../errors.js';
import type { Queryable } from '../db/database.js';
import type { EventStore } from '../store/event-store.js';
import { orderStreamId, parseOrderSnapshot, snapshotEventId, validateOrderId, validateSource, type OrderSnapshot, type SnapshotChannel } from './order-snapshot.js';
import { ORDER_IMPORT, ORDER_SNAPSHOT, type ImportOutcome } from './order-state.js';

export interface RecordedSnapshot {
  eventId: string;
  streamId: string;
  snapshot: OrderSnapshot;
}

export interface SnapshotIntake {
  /**
   * Validates a snapshot as the provider sent it and appends it to its order's stream. The same
   * snapshot delivered again is the same event: the store keeps it once.
   */
  record(source: string, channel: SnapshotChannel, body: unknown, options?: { capturedAt?: Date; tx?: Queryable }): Promise<RecordedSnapshot>;
  /** Records the back office's import outcome as an event of the order's stream, so it replays like the rest. */
  recordImport(outcome: ImportOutcome, options?: { at?: Date; id?: string; tx?: Queryable }): Promise<{ eventId: string; streamId: string }>;
}

/**
 * Snapshot intake: each raw snapshot becomes an `order.snapshot` event in the stream
 * `order:<source>:<orderId>`, with its capture time as the event's `occurredAt`.
 *
 * @example
 * ```ts
 * const intake = snapshotIntake(store)
 * await intake.record('pied', 'webhook', { orderId: '260065713', status: 'received', lastUpdate: '2026-09-04T18:17:03.120Z' })
 * await intake.recordImport({ source: 'pied', orderId: '260065713', outcome: 'confirmed', reference: '006' })
 * ```
 */
export function snapshotIntake(store: EventStore<any>): SnapshotIntake {
  return {
    async record(source, channel, body, options = {}) {
      const snapshot = parseOrderSnapshot(source, channel, body);
      const eventId = snapshotEventId(snapshot);
      const streamId = orderStreamId(snapshot.source, snapshot.orderId);
      const event = { id: eventId, type: ORDER_SNAPSHOT, data: { ...snapshot }, occurredAt: options.capturedAt };
      try {
        await store.append(streamId, [event], { tx: options.tx });
      } catch (err) {
        // The id hashes everything the provider said: the same snapshot, captured at another time.
        if (!(err instanceof EventIdConflictError)) throw err;
      }
      return { eventId, streamId, snapshot };
    },
    async recordImport(outcome, options = {}) {
      const source = validateSource(outcome?.source);
      const orderId = validateOrderId(outcome.orderId);
      if (outcome.outcome !== 'confirmed' && outcome.outcome !== 'failed') throw new ValidationError('outcome', "must be 'confirmed' or 'failed'");
      for (const field of ['reference', 'reason'] as const) {
        const value = outcome[field];
        if (value !== undefined && (typeof value !== 'string' || value.length > 500)) throw new ValidationError(field, 'must be a string of at most 500 characters');
      }
      const streamId = orderStreamId(source, orderId);
      if ((await store.streamVersion(streamId, { tx: options.tx })) === 0) throw new OrderNotFoundError(`${source}:${orderId}`);
      const data = { source, orderId, outcome: outcome.outcome, ...(outcome.reference ? { reference: outcome.reference } : {}), ...(outcome.reason ? { reason: outcome.reason } : {}) };
      const id = options.id ?? crypto.randomUUID();
      await store.append(streamId, [{ id, type: ORDER_IMPORT, data, occurredAt: options.at }], { tx: options.tx });
      return { eventId: id, streamId };
    },
  };
}
