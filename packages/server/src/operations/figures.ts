import { createCharges, type Charges } from 'rastro/internal/charges/charges.js';
import { CAPTURE_EFFECT } from 'rastro/internal/charges/sql.js';
import type { FigureSample } from '../observability/metrics.js';
import { ORDER_NORMALIZER } from 'rastro/internal/intake/order-normalizer.js';
import { ORDER_IMPORT, ORDER_SNAPSHOT } from 'rastro/internal/intake/order-state.js';
import { relayAdmin } from 'rastro/internal/outbox/relay-admin.js';
import { quoteSchema } from 'rastro/internal/db/schema-name.js';
import { effectLedger } from 'rastro/internal/processing/effect-admin.js';
import { liveBacklog } from 'rastro/internal/processing/live-backlog.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import { handledTypes } from 'rastro/internal/processing/read-batch.js';
import { runStatus } from 'rastro/internal/processing/run-status.js';
import { processingSql } from 'rastro/internal/processing/sql.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { trailStatus } from 'rastro/internal/trail/status.js';
import { reviewQueueCounts } from './review-queue.js';

/** What a figure reads with: the store, the processors this process knows (for their event types) and its charges (for their deadline). */
export interface FiguresContext {
  store: EventStore;
  processors?: ReadonlyMap<string, Processor>;
  /** The charges as configured; without them, charges are read with the default deadline. */
  charges?: Pick<Charges, 'countsByStatus' | 'stalePending' | 'deadlineMs' | 'effectTypes'>;
}

interface Figure<T> {
  read(context: FiguresContext): Promise<T>;
  /** The figure as Prometheus gauges; the console charts them too, one chart per name. */
  samples(value: T): FigureSample[];
}

/** The normalizer's live run before it first ran: it will have the live runner's default partitions. */
const NORMALIZER_PARTITIONS = 8;
const figure = <T>(definition: Figure<T>): Figure<T> => definition;
const seconds = (ms: number | null) => (ms === null ? null : ms / 1000);

function typesOf(processors: FiguresContext['processors']) {
  return (name: string) => {
    if (name === ORDER_NORMALIZER) return [ORDER_SNAPSHOT, ORDER_IMPORT];
    const processor = processors?.get(name);
    return processor ? handledTypes(processor) : null;
  };
}

/**
 * Every operational figure, read with a few cheap statements. The operations API, the console's
 * charts and /metrics all read this list: a new figure is one entry here, with its `read` and
 * its gauges.
 */
const FIGURES = {
  /** Relay lag: per outbox relay, messages not yet published and the age of the oldest. */
  relays: figure({
    async read({ store }) {
      return (await relayAdmin(store).status()).map((relay) => ({ relay: relay.name, runId: relay.runId, pending: relay.pending, lagSeconds: seconds(relay.lagMs), parked: relay.parked }));
    },
    samples: (relays) => relays.flatMap(({ relay, pending, lagSeconds }) => [
      { name: 'rastro_outbox_pending_messages', help: 'Outbox messages a relay has not published yet', labels: { relay }, value: pending },
      { name: 'rastro_outbox_lag_seconds', help: 'Age of the oldest outbox message a relay has not published (relay lag)', labels: { relay }, value: lagSeconds ?? 0 },
    ]),
  }),
  /** Checkpoint lag of each processor's live run. */
  processors: figure({
    async read({ store, processors }) {
      const runs = await runStatus(store, { typesOf: typesOf(processors) }).list({ mode: 'live' });
      return runs.map((run) => ({ processor: run.processor, runId: run.runId, eventsBehind: run.lag.events, secondsBehind: run.lag.seconds }));
    },
    samples: (runs) => runs.flatMap(({ processor, eventsBehind, secondsBehind }) => [
      { name: 'rastro_processor_lag_events', help: "Events past a processor's live checkpoints not handled yet", labels: { processor }, value: eventsBehind },
      { name: 'rastro_processor_lag_seconds', help: 'Age of the oldest event a processor has not handled yet', labels: { processor }, value: secondsBehind ?? 0 },
    ]),
  }),
  /** The order normalizer's lag: snapshots its live checkpoint has not reached (all of them before its first round). */
  normalizer: figure({
    async read({ store }) {
      const runId = `live:${ORDER_NORMALIZER}`;
      const types = [ORDER_SNAPSHOT, ORDER_IMPORT];
      const run = await runStatus(store, { typesOf: () => types }).get(runId);
      if (run) return { eventsBehind: run.lag.events, secondsBehind: run.lag.seconds };
      const backlog = await liveBacklog(store.db, store.schema).of(runId, types, NORMALIZER_PARTITIONS);
      return { eventsBehind: backlog.events, secondsBehind: seconds(backlog.oldestMs) };
    },
    samples: ({ eventsBehind, secondsBehind }) => [
      { name: 'rastro_normalizer_lag_events', help: 'Order snapshots the normalizer has not handled yet', value: eventsBehind },
      { name: 'rastro_normalizer_lag_seconds', help: 'Age of the oldest order snapshot the normalizer has not handled', value: secondsBehind ?? 0 },
    ],
  }),
  /** The effect ledger by state: uncertain ones wait for review. */
  effects: figure({
    read: ({ store }) => effectLedger(store).countByState(),
    samples: (counts) => Object.entries(counts).map(([state, value]) => ({ name: 'rastro_effects', help: 'Effect ledger entries by state', labels: { state }, value })),
  }),
  /** Charges by status, and PENDING ones past the deadline: money in an unknown place until reconciliation settles them. */
  charges: figure({
    async read({ store, charges = createCharges(store) }) {
      const [byStatus, stale] = await Promise.all([charges.countsByStatus(), charges.stalePending()]);
      return { byStatus, stalePending: { count: stale.count, oldestSeconds: stale.count > 0 ? stale.oldestSeconds : null, deadlineSeconds: charges.deadlineMs / 1000 } };
    },
    samples: ({ byStatus, stalePending }) => [
      ...Object.entries(byStatus).map(([status, value]) => ({ name: 'rastro_charges', help: "Charges by status (their capture's state in the effect ledger)", labels: { status }, value })),
      { name: 'rastro_charges_stale_pending', help: 'PENDING charges past the deadline: reconciliation has not settled them yet', value: stalePending.count },
      { name: 'rastro_charges_stale_pending_oldest_seconds', help: 'Age of the oldest PENDING charge past the deadline (0 when there is none)', value: stalePending.oldestSeconds ?? 0 },
    ],
  }),
  /** Effects in review (past their business deadline, the provider could not say), per effect type: each one waits for a person. */
  effectsNeedingReview: figure({
    async read({ store, charges }) {
      const known = Object.keys(charges?.effectTypes ?? { [CAPTURE_EFFECT]: null });
      return { ...Object.fromEntries(known.map((type) => [type, 0])), ...(await effectLedger(store).countByType('needs-review')) } as Record<string, number>;
    },
    samples: (byType) => Object.entries(byType).map(([effectType, value]) => ({
      name: 'rastro_effects_needs_review', help: 'Effects past their business deadline that the provider could not account for, waiting for review, by effect type', labels: { effect_type: effectType }, value,
    })),
  }),
  /** What waits in the review queue, by its one definition (REVIEW_QUEUE): the cards and the review page's lists read the same. */
  review: figure({
    read: ({ store }) => reviewQueueCounts(store),
    samples: ({ charges, effects }) => [
      { name: 'rastro_review_queue', help: 'What waits in the review queue: charges in review (capture needs-review or uncertain), effects waiting for review (uncertain or needs-review, charge captures apart)', labels: { queue: 'charges' }, value: charges },
      { name: 'rastro_review_queue', help: 'What waits in the review queue: charges in review (capture needs-review or uncertain), effects waiting for review (uncertain or needs-review, charge captures apart)', labels: { queue: 'effects' }, value: effects },
    ],
  }),
  /** Parked events of processors and parked messages of relays, per processor or relay. */
  parked: figure({
    async read({ store }) {
      const sql = processingSql(quoteSchema(store.schema));
      const { rows } = await store.db.query<{ processor: string; relay: boolean; n: number }>(sql.parkedCounts);
      const events: Record<string, number> = {};
      const messages: Record<string, number> = {};
      for (const row of rows) (row.relay ? messages : events)[row.processor] = Number(row.n);
      const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
      return { events: sum(events), messages: sum(messages), eventsByProcessor: events, messagesByRelay: messages };
    },
    samples: ({ events, messages }) => [
      { name: 'rastro_parked_events', help: 'Events processors parked (failed, or waiting behind a failed one)', value: events },
      { name: 'rastro_parked_outbox_messages', help: 'Outbox messages relays parked (refused, or waiting behind a refused one)', value: messages },
    ],
  }),
  /** Readers held back by open transactions (`rastro store status`). */
  readers: figure({
    async read({ store }) {
      const delay = await store.readerDelay();
      return { heldBack: delay.heldBack, oldestWriterSeconds: seconds(delay.oldestWriterMs), oldestPreparedSeconds: seconds(delay.oldestPreparedMs) };
    },
    samples: ({ heldBack, oldestWriterSeconds }) => [
      { name: 'rastro_reader_held_back_events', help: 'Committed events readers cannot see yet: an older transaction is still open', value: heldBack },
      { name: 'rastro_oldest_open_transaction_seconds', help: 'Age of the oldest open writing transaction, which holds readers back', value: oldestWriterSeconds ?? 0 },
    ],
  }),
  /** The trail: how far the sealer is behind, and when a verification last found nothing. */
  trail: figure({
    read: ({ store }) => trailStatus(store),
    samples: ({ sealLag, lastCleanVerificationAt }) => [
      { name: 'rastro_trail_seal_lag_events', help: 'Committed events the sealer has not sealed into a block yet', value: sealLag.events },
      { name: 'rastro_trail_seal_lag_seconds', help: 'Age of the oldest committed event not sealed yet (0 when every one is)', value: sealLag.seconds ?? 0 },
      {
        name: 'rastro_trail_last_clean_verification_timestamp_seconds', help: 'When a verification of the trail (rastro verify, the audit) last found nothing, as Unix time; 0 before the first',
        value: lastCleanVerificationAt ? Date.parse(lastCleanVerificationAt) / 1000 : 0,
      },
    ],
  }),
} satisfies Record<string, Figure<unknown>>;

type Definitions = typeof FIGURES;

/** Every figure at one moment. */
export type Figures = { [K in keyof Definitions]: Awaited<ReturnType<Definitions[K]['read']>> } & { at: string };

/**
 * Reads every figure at once.
 *
 * @example
 * ```ts
 * const figures = await readFigures({ store })
 * console.log(figures.effects.uncertain, figures.relays[0]?.lagSeconds)
 * ```
 */
export async function readFigures(context: FiguresContext): Promise<Figures> {
  const entries = await Promise.all(Object.entries(FIGURES).map(async ([key, definition]) => [key, await (definition as Figure<unknown>).read(context)] as const));
  return { at: new Date().toISOString(), ...Object.fromEntries(entries) } as Figures;
}

/** Reads one figure, e.g. `readFigure('normalizer', { store })`. */
export function readFigure<K extends keyof Definitions>(key: K, context: FiguresContext): Promise<Figures[K]> {
  return (FIGURES[key] as Figure<Figures[K]>).read(context);
}

/** The figures as gauge samples, for /metrics and the console's charts. */
export function figureSamples(figures: Figures): FigureSample[] {
  return Object.entries(FIGURES).flatMap(([key, definition]) => (definition as Figure<unknown>).samples(figures[key as keyof Definitions]));
}
