import { recencyAllows } from '../processing/guards.js';
import type { RecordedEvent } from '../store/event.js';
import type { OrderSnapshot, OrderStatus } from './order-snapshot.js';

/** Event types in an order's stream. */
export const ORDER_SNAPSHOT = 'order.snapshot';
export const ORDER_IMPORT = 'order.import-recorded';

/** Our own import lifecycle: captured, queued once the invoice and customer are there, confirmed by the back office. */
export type ImportLifecycle = 'captured' | 'queued' | 'confirmed';

/** The outcome of a back-office import, recorded as an event in the order's stream. */
export interface ImportOutcome {
  source: string;
  orderId: string;
  outcome: 'confirmed' | 'failed';
  /** The back office's reference or return code. */
  reference?: string;
  /** Why it failed. */
  reason?: string;
}

/** The normalized order, as the `order` projection stores it. Times are ISO strings. */
export interface NormalizedOrder {
  source: string;
  orderId: string;
  /** The provider's payment status; null before the first snapshot. */
  status: OrderStatus | null;
  lifecycle: ImportLifecycle;
  /** The reference the recency guard compares with: the latest `lastUpdate` seen, never cleared. */
  lastUpdate: string | null;
  /** Stamped at the first transition to received; never moves. */
  paidAt: string | null;
  /** When the current partial payment started; null when not partial. */
  partialSince: string | null;
  /** Stamped once, at a real transition to cancelled of a confirmed order: the alert's stamp. */
  cancelledAfterImportAt: string | null;
  importedAt: string | null;
  importFailure: { at: string; reason: string | null } | null;
  invoice: unknown;
  customer: unknown;
  payload: Record<string, unknown> | null;
  /** The raw snapshot event the state last took its payment status from. */
  snapshotEventId: string | null;
}

export function emptyOrder(source: string, orderId: string): NormalizedOrder {
  return {
    source, orderId, status: null, lifecycle: 'captured', lastUpdate: null, paidAt: null, partialSince: null,
    cancelledAfterImportAt: null, importedAt: null, importFailure: null, invoice: null, customer: null, payload: null, snapshotEventId: null,
  };
}

const present = (value: unknown) => value !== undefined && value !== null && value !== '';

/**
 * The order after a snapshot, assuming the recency guard let it through. Transitions are read
 * against `prev`: `paidAt` at the first move to received, `cancelledAfterImportAt` at a move to
 * cancelled of a confirmed order, each stamped once.
 */
export function applySnapshot(prev: NormalizedOrder, snapshot: OrderSnapshot, event: RecordedEvent): NormalizedOrder {
  const at = snapshot.lastUpdate ?? event.occurredAt.toISOString();
  const { status } = snapshot;
  const invoice = present(snapshot.payload.invoice) ? snapshot.payload.invoice : prev.invoice;
  const customer = present(snapshot.payload.customer) ? snapshot.payload.customer : prev.customer;
  const cancelledNow = prev.lifecycle === 'confirmed' && prev.status !== 'cancelled' && status === 'cancelled';
  return {
    ...prev,
    status,
    lifecycle: prev.lifecycle === 'confirmed' ? 'confirmed' : present(invoice) && present(customer) ? 'queued' : 'captured',
    lastUpdate: snapshot.lastUpdate ?? prev.lastUpdate,
    paidAt: prev.paidAt ?? (status === 'received' && prev.status !== 'received' ? at : null),
    partialSince: status === 'partial' ? (prev.status === 'partial' ? prev.partialSince : at) : null,
    cancelledAfterImportAt: prev.cancelledAfterImportAt ?? (cancelledNow ? at : null),
    invoice,
    customer,
    payload: snapshot.payload,
    snapshotEventId: event.id,
  };
}

/** The order after its import outcome: confirmed once, or a failure noted (still queued). */
export function applyImport(prev: NormalizedOrder, outcome: ImportOutcome, event: RecordedEvent): NormalizedOrder {
  const at = event.occurredAt.toISOString();
  if (outcome.outcome === 'failed') return { ...prev, importFailure: { at, reason: outcome.reason ?? null } };
  return { ...prev, lifecycle: 'confirmed', importedAt: prev.importedAt ?? at, importFailure: null };
}

/**
 * The order after an event of its stream, under the recency guard's rule: a snapshot older than
 * the reference (to the second) changes nothing.
 */
export function applyOrderEvent(prev: NormalizedOrder, event: RecordedEvent): NormalizedOrder {
  if (event.type === ORDER_IMPORT) return applyImport(prev, event.data as unknown as ImportOutcome, event);
  if (event.type !== ORDER_SNAPSHOT) return prev;
  const snapshot = event.data as unknown as OrderSnapshot;
  const allowed = recencyAllows(prev.lastUpdate === null ? null : new Date(prev.lastUpdate), snapshot.lastUpdate === null ? null : new Date(snapshot.lastUpdate));
  return allowed ? applySnapshot(prev, snapshot, event) : prev;
}

/** The order after these events of its stream, in stream order: the state the normalizer stored. */
export function foldOrderHistory(source: string, orderId: string, events: readonly RecordedEvent[]): NormalizedOrder {
  return events.reduce(applyOrderEvent, emptyOrder(source, orderId));
}
