import { OrderNotFoundError } from '../errors.js';
import { runLiveRound } from '../processing/live-round.js';
import type { Processor } from '../processing/processor.js';
import { projections } from '../processing/projections.js';
import { runReplay, type RunSummary } from '../processing/replay-runner.js';
import { replayStream } from '../processing/stream-replay.js';
import type { EventStore } from '../store/event-store.js';
import { orderKey, orderStreamId, parseOrderKey, type OrderSnapshot } from './order-snapshot.js';
import { ORDER_NORMALIZER_POLICY, ORDER_PROJECTION, orderNormalizer, type OrderNormalizerOptions } from './order-normalizer.js';
import { ORDER_SNAPSHOT, type ImportOutcome, type NormalizedOrder } from './order-state.js';
import { snapshotIntake, type SnapshotIntake } from './snapshot-intake.js';
import { newRunId } from '../processing/run-id.js';

/** One event of an order's raw history, as `GET /orders/{id}` shows it. */
export interface OrderHistoryEntry {
  eventId: string;
  version: number;
  type: 'snapshot' | 'import';
  capturedAt: string;
  snapshot?: Omit<OrderSnapshot, 'source' | 'orderId'>;
  import?: Omit<ImportOutcome, 'source' | 'orderId'>;
}

/** An order: its normalized state (null until the normalizer has seen it) and its raw history. */
export interface OrderView {
  id: string;
  state: NormalizedOrder | null;
  /** The recency guard's stored reference. */
  observedAt: string | null;
  history: OrderHistoryEntry[];
}

function historyEntry(event: Awaited<ReturnType<EventStore['readStream']>>[number]): OrderHistoryEntry {
  const base = { eventId: event.id, version: event.streamVersion, capturedAt: event.occurredAt.toISOString() };
  const { source: _source, orderId: _orderId, ...rest } = event.data as Record<string, unknown>;
  if (event.type === ORDER_SNAPSHOT) return { ...base, type: 'snapshot', snapshot: rest as OrderHistoryEntry['snapshot'] };
  return { ...base, type: 'import', import: rest as OrderHistoryEntry['import'] };
}

export interface Orders {
  readonly intake: SnapshotIntake;
  readonly normalizer: Processor;
  /** The order's normalized state and raw history; throws {@link OrderNotFoundError}. */
  get(id: string): Promise<OrderView>;
  /** One normalizer round through the live checkpoint: every committed snapshot not yet seen. */
  normalizeRound(options?: { onProgress?: (left: number) => void }): Promise<{ events: number; counters: Record<string, number> }>;
  /** A full reprocess: a replay of the whole log with a new run id. */
  reprocess(options?: { runId?: string; onProgress?: (progress: { done: number; total: number }) => void }): Promise<RunSummary>;
  /** Re-reads one order's raw snapshots through the normalizer, never its stored row. */
  renormalize(id: string): Promise<RunSummary>;
}

/**
 * Orders from a payment provider: intake, the normalizer and its runs, and reading the state.
 *
 * @example
 * ```ts
 * const orders = createOrders(store, { alert: (alert, key) => mailer.send(alert, key) })
 * await orders.intake.record('pied', 'webhook', body)
 * await orders.normalizeRound()
 * const { state } = await orders.get('pied:260065713')
 * ```
 */
export function createOrders(store: EventStore<any>, options: Omit<OrderNormalizerOptions, 'store'>): Orders {
  const normalizer = orderNormalizer({ store, alert: options.alert });
  const policy = ORDER_NORMALIZER_POLICY;
  const rows = projections(store);
  return {
    intake: snapshotIntake(store),
    normalizer,
    async get(id) {
      const { source, orderId } = parseOrderKey(id);
      const events = await store.readStream(orderStreamId(source, orderId));
      if (events.length === 0) throw new OrderNotFoundError(id);
      const row = await rows.get<NormalizedOrder>(ORDER_PROJECTION, orderKey(source, orderId));
      return { id: orderKey(source, orderId), state: row?.doc ?? null, observedAt: row?.observedAt?.toISOString() ?? null, history: events.map(historyEntry) };
    },
    normalizeRound: (round = {}) => runLiveRound(normalizer, { store, policy, onProgress: round.onProgress }),
    reprocess: (run = {}) => runReplay(normalizer, { store, policy, runId: run.runId ?? newRunId('reprocess'), onProgress: run.onProgress }),
    async renormalize(id) {
      const { source, orderId } = parseOrderKey(id);
      const streamId = orderStreamId(source, orderId);
      let version = await store.streamVersion(streamId);
      if (version === 0) throw new OrderNotFoundError(id);
      // A snapshot appended while this ran may have been written before this run's last one:
      // run again until the stream stood still, so the last write is of the whole stream.
      for (let attempt = 1; ; attempt++) {
        const summary = await replayStream(normalizer, { store, streamId, policy, runId: `renormalize-${source}-${orderId}-${Date.now()}-${attempt}` });
        const now = await store.streamVersion(streamId);
        if (now === version || attempt === 5) return summary;
        version = now;
      }
    },
  };
}
