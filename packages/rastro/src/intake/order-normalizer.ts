import type { EffectPolicy } from '../processing/policy.js';
import { defineProcessor, type HandlerContext, type Processor } from '../processing/processor.js';
import type { RecordedEvent } from '../store/event.js';
import type { EventStore } from '../store/event-store.js';
import { orderKey, type OrderSnapshot } from './order-snapshot.js';
import { applyImport, applySnapshot, foldOrderHistory, ORDER_IMPORT, ORDER_SNAPSHOT, type ImportOutcome, type NormalizedOrder } from './order-state.js';

/** The processor's name: its live run is `live:orders`. */
export const ORDER_NORMALIZER = 'orders';
/** The projection holding normalized orders, keyed `<source>:<orderId>`. */
export const ORDER_PROJECTION = 'order';
/** The effect type of the "cancelled after import" alert. */
export const CANCELLED_AFTER_IMPORT = 'order.cancelled-after-import';

/** What the "cancelled after import" alert says. */
export interface CancelledAfterImportAlert {
  order: string;
  source: string;
  orderId: string;
  cancelledAt: string;
  importedAt: string | null;
  /** The raw snapshot that moved the order to cancelled. */
  snapshotEventId: string;
}

export interface OrderNormalizerOptions {
  store: EventStore<any>;
  /**
   * Sends the alert; `idempotencyKey` is `<event id>:order.cancelled-after-import`, the same in
   * every run. Called through the effect ledger, so at most once per key.
   */
  alert(alert: CancelledAfterImportAlert, idempotencyKey: string): Promise<unknown>;
}

/**
 * The normalizer's policy: send the alert, and since a mail cannot be taken back, a failure
 * after the call may have happened leaves it `uncertain` for review.
 *
 * @example
 * ```ts
 * await runReplay(orderNormalizer({ store, alert }), { store, runId: 'reprocess-1', policy: ORDER_NORMALIZER_POLICY })
 * ```
 */
export const ORDER_NORMALIZER_POLICY: EffectPolicy = Object.freeze({ [CANCELLED_AFTER_IMPORT]: Object.freeze({ mode: 'apply', onFailure: 'keep' }) });

/** The order as the stream says before `event`: the fold of its earlier events under the recency rule. */
async function orderBefore(store: EventStore<any>, event: RecordedEvent, source: string, orderId: string): Promise<NormalizedOrder> {
  const earlier = event.streamVersion > 1 ? await store.readStream(event.streamId, { toVersion: event.streamVersion - 1 }) : [];
  return foldOrderHistory(source, orderId, earlier);
}

const observedAt = (lastUpdate: string | null) => (lastUpdate === null ? null : new Date(lastUpdate));

async function normalizeSnapshot(options: OrderNormalizerOptions, event: RecordedEvent, ctx: HandlerContext): Promise<void> {
  const snapshot = event.data as unknown as OrderSnapshot;
  const key = orderKey(snapshot.source, snapshot.orderId);
  const prev = await orderBefore(options.store, event, snapshot.source, snapshot.orderId);
  const next = applySnapshot(prev, snapshot, event);
  // The recency guard decides; a transition only counts when the upsert applied.
  const applied = await ctx.upsert(ORDER_PROJECTION, key, next as unknown as Record<string, unknown>, { observedAt: observedAt(snapshot.lastUpdate) });
  if (applied && prev.cancelledAfterImportAt === null && next.cancelledAfterImportAt !== null) {
    const alert: CancelledAfterImportAlert = {
      order: key, source: next.source, orderId: next.orderId, cancelledAt: next.cancelledAfterImportAt, importedAt: next.importedAt, snapshotEventId: event.id,
    };
    await ctx.effect(CANCELLED_AFTER_IMPORT, (idempotencyKey) => options.alert(alert, idempotencyKey));
  }
}

async function normalizeImport(options: OrderNormalizerOptions, event: RecordedEvent, ctx: HandlerContext): Promise<void> {
  const outcome = event.data as unknown as ImportOutcome;
  const prev = await orderBefore(options.store, event, outcome.source, outcome.orderId);
  // Our own event carries no provider time: it applies and keeps the reference.
  await ctx.upsert(ORDER_PROJECTION, orderKey(outcome.source, outcome.orderId), applyImport(prev, outcome, event) as unknown as Record<string, unknown>, { observedAt: null });
}

/**
 * The order normalizer: a processor over the order streams that keeps one normalized order per
 * stream with the recency guard, and sends the "cancelled after import" alert through
 * `ctx.effect`. Run it live (`runLive`), or as a replay for a full reprocess.
 *
 * @example
 * ```ts
 * const normalizer = orderNormalizer({ store, alert: (alert, key) => mailer.send(alert, key) })
 * const live = await runLive(normalizer, { store, policy: ORDER_NORMALIZER_POLICY })
 * ```
 */
export function orderNormalizer(options: OrderNormalizerOptions): Processor {
  return defineProcessor({
    name: ORDER_NORMALIZER,
    effects: [CANCELLED_AFTER_IMPORT],
    handlers: {
      [ORDER_SNAPSHOT]: (event, ctx) => normalizeSnapshot(options, event, ctx),
      [ORDER_IMPORT]: (event, ctx) => normalizeImport(options, event, ctx),
    },
  });
}
