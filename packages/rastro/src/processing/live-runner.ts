import { quoteSchema } from '../db/schema-name.js';
import { ValidationError } from '../errors.js';
import type { EventStore } from '../store/event-store.js';
import type { EventMap } from '../store/event-types.js';
import { appendedTypes } from '../store/append-notifier.js';
import { eventsChannel, releaseChannel } from '../store/subscribe.js';
import { sweepAbandonedReservations } from './effect-admin.js';
import { policyFor, type EffectPolicy } from './policy.js';
import type { Processor } from './processor.js';
import { ParkedStreamReleasedError } from './parked-streams.js';
import { processEvents } from './process-events.js';
import { saveProgress, type Checkpointing } from './progress.js';
import { handledTypes, isAfter, loadCheckpoints, readRunBatch, WHOLE_LOG } from './read-batch.js';
import { openRunnerSession } from './runner-session.js';
import { PartitionLeases, partitionLockName } from './runners/partition-leases.js';
import { startLeasedLoop } from './runners/leased-loop.js';
import { Counters, type RunContext } from './run-context.js';
import { processingSql } from './sql.js';
import { Reconciler, type ReconcileReport } from './ledger/reconciler.js';
import { ScannedBelow } from './runners/scanned-below.js';

export interface LiveOptions<Effect extends string = string> {
  store: EventStore<any>;
  /** A rule per effect type the processor declares (see {@link policyFor}). */
  policy: EffectPolicy<Effect>;
  /** Streams are spread over this many partitions, shared by the processor's live runners. Fixed per processor. @defaultValue 8 */
  partitions?: number;
  /** @defaultValue 500 */
  batchSize?: number;
  /** Longest wait for new events when no notification arrives. @defaultValue 1000 */
  pollIntervalMs?: number;
  /** @defaultValue 5 minutes */
  leaseMs?: number;
  /** @defaultValue 32 */
  effectConcurrency?: number;
  /** Called when a batch fails; the runner backs off (one poll interval, doubling up to 30 s) and tries again. */
  onError?: (err: unknown) => void;
  /** How often the processor's effect types that can ask their provider reconcile. @defaultValue 10 s */
  reconcileIntervalMs?: number;
  /** Called after a reconciliation pass that asked about something. */
  onReconcile?: (report: ReconcileReport) => void;
}

export interface LiveRunner {
  readonly runId: string;
  /** Partitions this runner holds now. */
  readonly partitions: readonly number[];
  /** Counters of this runner since it started (persisted per run in `run_counters`). */
  readonly counters: Counters;
  /** Stops after the current batch and releases its partitions. */
  stop(): Promise<void>;
  readonly done: Promise<void>;
}

/**
 * Tails the log for a processor, from its checkpoints, with the store's no-skip reading. State
 * and checkpoints commit together, so state is exactly-once although delivery is at-least-once.
 * Several runners of one processor (in one or many processes) share the streams: each stream
 * belongs to one of `partitions` partitions, and each partition to one runner at a time (an
 * advisory lock), so per-stream order holds and no event is processed twice.
 *
 * @example
 * ```ts
 * const runner = await runLive(commissions, { store, policy: { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } })
 * // …
 * await runner.stop()
 * ```
 */
export async function runLive<E extends EventMap, Effect extends string>(typed: Processor<E, Effect>, options: LiveOptions<Effect>): Promise<LiveRunner> {
  const processor = typed as unknown as Processor;
  const policy = policyFor(processor, options.policy);
  const count = options.partitions ?? 8;
  if (!Number.isInteger(count) || count < 1 || count > 1024) throw new ValidationError('partitions', 'must be an integer from 1 to 1024');
  const { store } = options;
  const db = store.db;
  const sql = processingSql(quoteSchema(store.schema));
  const runId = `live:${processor.name}`;
  const { rows } = await db.query<{ partitions: number | null }>(sql.startRun, [runId, processor.name, 'live', false, JSON.stringify(policy), null, null, null, null, null, null, count]);
  const fixed = rows[0]?.partitions;
  if (fixed !== null && fixed !== undefined && fixed !== count) {
    throw new ValidationError('partitions', `the live run of ${processor.name} has ${fixed} partitions, fixed when it started; pass ${fixed}`);
  }
  const runner = await openRunnerSession(db, sql);
  const run: RunContext = {
    db, sql, schema: store.schema, processor, decoder: { ...store.decoder, types: processor.events ?? store.decoder.types }, runId, mode: 'live', simulate: false, policy,
    // A renewed session has a new token: reservations from now on carry it.
    get ownerToken() {
      return runner.token;
    },
    leaseMs: options.leaseMs ?? 5 * 60_000, effectConcurrency: options.effectConcurrency ?? 32,
  };
  const leases = new PartitionLeases(runner, sql, partitionLockName(store.schema, processor.name), processor.name, count);
  const counters = new Counters();
  const scanned = new ScannedBelow();
  const handled = new Set(handledTypes(processor));

  async function step(): Promise<boolean | 'held'> {
    await leases.rebalance();
    const owned = [...leases.owned];
    if (owned.length === 0) return false;
    scanned.under(runner.token);
    const checkpoints = scanned.raise(await loadCheckpoints(db, sql, runId, owned));
    const after = [...checkpoints.values()].reduce((min, cp) => (isAfter(min, cp) ? cp : min));
    const limit = options.batchSize ?? 500;
    const input = await readRunBatch(run, WHOLE_LOG, after, limit, { partitions: { count, owned } });
    // The database went back in time (a failover lost its tail): read again, from the checkpoints.
    if (!scanned.continues(input.frontier)) return true;
    const read = input.events;
    // A partition whose checkpoint is ahead of the others has handled some of these already.
    const events = read.filter((event) => isAfter(event, checkpoints.get(event.partition)!));
    const last = read[read.length - 1];
    // Events of these partitions committed behind a transaction still open: they are read as
    // soon as it ends, not at the next notification.
    if (!last) {
      scanned.record(owned, input.frontier);
      return input.heldBack ? 'held' : false;
    }
    // Every owned partition moves past the whole read, also past events of partitions that had them already.
    const final = events[events.length - 1];
    const checkpointing: Checkpointing = { partitions: owned, at: (through) => (through === final ? last : through) };
    if (events.length > 0) {
      try {
        const batch = await processEvents(run, { ...input, events }, checkpointing);
        for (const [name, value] of batch.counters.entries()) counters.add(name, value);
      } catch (err) {
        // A retry lifted a block this batch parked events behind: read the batch again.
        if (err instanceof ParkedStreamReleasedError) return true;
        throw err;
      }
      // Events committed while the batch ran are read at once: their notification arrives a few
      // milliseconds after their commit, and the read finds nothing new only when there is nothing.
      return true;
    }
    await saveProgress(run, db, new Counters(), checkpointing, last);
    return read.length === limit || (input.heldBack ? 'held' : false);
  }

  const reconciler = processor.effects && Object.keys(processor.effects).length > 0
    ? new Reconciler(store, { types: processor.effects, leaseMs: run.leaseMs })
    : undefined;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const loop = await startLeasedLoop(runner, leases, {
    db,
    channels: [eventsChannel(store.schema)],
    // Appends of other types are no reason to read; the poll still comes.
    wakesFor: (payload) => appendedTypes(payload)?.some((type) => handled.has(type)) ?? true,
    releaseChannels: [releaseChannel(store.schema)],
    pollIntervalMs,
    backoffMs: pollIntervalMs,
    maxBackoffMs: 30_000,
    step,
    chores: [
      { intervalMs: 60_000, run: () => sweepAbandonedReservations(db, sql, run.leaseMs, runner.token).then(() => undefined) },
      // Effects of this processor whose providers can be asked settle themselves.
      ...(reconciler ? [{
        intervalMs: options.reconcileIntervalMs ?? 10_000,
        run: async () => {
          const report = await reconciler.pass(runner.token);
          if (report.asked > 0) options.onReconcile?.(report);
        },
      }] : []),
    ],
    onError: options.onError,
  });
  return {
    runId,
    get partitions() {
      return loop.partitions;
    },
    counters,
    stop: () => loop.stop(),
    done: loop.done,
  };
}
