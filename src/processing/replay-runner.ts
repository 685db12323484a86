import { ValidationError } from '../errors.js';
import { LOG_START } from '../store/event.js';
import type { EventStore } from '../store/event-store.js';
import { quoteSchema } from '../db/schema-name.js';
import { validatePolicy, type EffectPolicy } from './policy.js';
import type { Processor } from './processor.js';
import { countRange, loadCheckpoints, rangeRemaining, readRunBatch, type RunRange } from './read-batch.js';
import { ParkedStreamReleasedError } from './parked-streams.js';
import { processEvents } from './process-events.js';
import type { Checkpointing } from './progress.js';
import { openRunnerSession } from './runner-session.js';
import { claimRun } from './runners/run-claim.js';
import { holdRunAlive } from './runners/run-heartbeat.js';
import { newRunId, RUN_ID } from './run-id.js';
import { Counters, type RunContext } from './run-context.js';
import { processingSql } from './sql.js';
import { sweepAbandonedReservations } from './effect-admin.js';

export interface ReplayOptions {
  store: EventStore;
  /** Re-using a run id continues that run from its checkpoint. @defaultValue `replay-<time>-<random>` */
  runId?: string;
  /** Events that occurred at or after this time. */
  from?: Date;
  /** Events that occurred before this time. */
  to?: Date;
  /** Or a position range, inclusive. */
  fromPosition?: number;
  toPosition?: number;
  policy: EffectPolicy;
  simulate?: boolean;
  /** Events per batch: one reservation round trip, one probe, one commit per batch. @defaultValue 1000 */
  batchSize?: number;
  /** @defaultValue 5 minutes */
  leaseMs?: number;
  /** @defaultValue 32 */
  effectConcurrency?: number;
  /** Called after every batch. */
  onProgress?: (progress: { done: number; total: number; counters: Counters }) => void;
}

export interface RunSummary {
  runId: string;
  total: number;
  counters: Record<string, number>;
}

function validateRange(options: ReplayOptions): RunRange {
  const date = (field: string, value: unknown) => {
    if (value === undefined) return null;
    if (!(value instanceof Date) || !Number.isFinite(value.getTime())) throw new ValidationError(field, 'must be a valid Date');
    return value;
  };
  const position = (field: string, value: unknown) => {
    if (value === undefined) return null;
    if (!Number.isSafeInteger(value) || (value as number) < 0) throw new ValidationError(field, 'must be a non-negative integer');
    return value as number;
  };
  const range = { from: date('from', options.from), to: date('to', options.to), fromPosition: position('fromPosition', options.fromPosition), toPosition: position('toPosition', options.toPosition) };
  if (range.from && range.to && range.from >= range.to) throw new ValidationError('to', 'must be after from');
  return range;
}

/**
 * Runs a processor's handlers over a slice of the log with its own run id, policy and
 * checkpoint. Safe beside the live run: the effect ledger and the guarded upserts decide, effect
 * by effect and row by row, what still has to happen. Re-running the same run id after a crash
 * continues where it stopped.
 *
 * @example
 * ```ts
 * await runReplay(commissions, {
 *   store, runId: 'fix-2026-10-14', from: new Date('2026-10-14'), to: new Date('2026-10-15'),
 *   policy: { 'notify-seller': { mode: 'apply', onFailure: 'keep' } },
 * })
 * ```
 */
export async function runReplay(processor: Processor, options: ReplayOptions): Promise<RunSummary> {
  const runId = options.runId ?? newRunId('replay');
  if (!RUN_ID.test(runId) || runId.startsWith('live:')) throw new ValidationError('runId', 'must be 1 to 100 letters, digits, dots, dashes, colons or underscores, not starting with live:');
  const policy = validatePolicy(options.policy);
  const range = validateRange(options);
  const { store } = options;
  const db = store.db;
  const sql = processingSql(quoteSchema(store.schema));
  const runner = await openRunnerSession(db, sql);
  let unclaim: (() => Promise<void>) | undefined;
  let beating: { stop(): Promise<void> } | undefined;
  try {
    unclaim = await claimRun(runner, sql, store.schema, runId);
    const run: RunContext = {
      db,
      // A simulate run's failures go to its own record, not to the operational queue.
      sql: options.simulate ? processingSql(quoteSchema(store.schema), { simulate: true }) : sql,
      schema: store.schema,
      processor,
      runId,
      mode: 'replay',
      simulate: options.simulate ?? false,
      policy,
      ownerToken: runner.token,
      leaseMs: options.leaseMs ?? 5 * 60_000,
      effectConcurrency: options.effectConcurrency ?? 32,
    };
    await sweepAbandonedReservations(db, sql, run.leaseMs, runner.token);
    const total = await countRange(db, sql, processor, range);
    const { rows } = await db.query<{ processor: string; simulate: boolean }>(sql.startRun, [
      runId, processor.name, 'replay', run.simulate, JSON.stringify(policy), range.from, range.to, range.fromPosition, range.toPosition, total, null, null,
    ]);
    if (rows[0]!.processor !== processor.name || rows[0]!.simulate !== run.simulate) {
      throw new ValidationError('runId', `run ${runId} belongs to processor ${rows[0]!.processor}${rows[0]!.simulate ? ' (simulate)' : ''}; choose another run id`);
    }
    beating = await holdRunAlive(db, sql, runId, runner.token);
    let checkpoint = (await loadCheckpoints(db, sql, runId, [0])).get(0) ?? LOG_START;
    const checkpointing: Checkpointing = { partitions: [0], at: (last) => last };
    const counters = new Counters();
    const limit = options.batchSize ?? 1000;
    const read = (after: typeof checkpoint) => readRunBatch(run, range, after, limit);
    let done = 0;
    // The next batch is read while this one is processed: reading events needs none of its state.
    // Its blocked streams are read before this batch commits, so the streams this batch parks
    // are added to them.
    let next = read(checkpoint);
    let parkedStreams = new Set<string>();
    // A batch that only moved the run's progress is saved while the next one runs.
    let saving: Promise<void> = Promise.resolve();
    for (;;) {
      const input = await next;
      const { events } = input;
      for (const stream of parkedStreams) input.blocked.add(stream);
      if (events.length === 0) {
        // Done only when no event of the range is left after the checkpoint; events held back
        // by an open transaction (or let through since the read) are read again shortly.
        if (!(await rangeRemaining(db, sql, processor, range, checkpoint))) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
        next = read(checkpoint);
        continue;
      }
      const start = checkpoint;
      checkpoint = events[events.length - 1]!;
      next = read(checkpoint);
      next.catch(() => undefined);
      let batch;
      try {
        batch = await processEvents(run, input, checkpointing, { previous: saving });
      } catch (err) {
        if (!(err instanceof ParkedStreamReleasedError)) throw err;
        // A retry lifted a block this batch parked events behind: read the batch again.
        checkpoint = start;
        next = read(checkpoint);
        continue;
      }
      saving = batch.saving ?? Promise.resolve();
      saving.catch(() => undefined);
      parkedStreams = batch.parkedStreams;
      for (const [name, value] of batch.counters.entries()) counters.add(name, value);
      done += events.length;
      options.onProgress?.({ done, total, counters });
    }
    await saving;
    await db.query(sql.completeRun, [runId]);
    return { runId, total, counters: await runCounters(db, sql, runId) };
  } finally {
    await beating?.stop();
    await unclaim?.();
    await runner.close();
  }
}

export async function runCounters(db: EventStore['db'], sql: ReturnType<typeof processingSql>, runId: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ name: string; value: number }>(sql.counters, [runId]);
  return Object.fromEntries(rows.map((row) => [row.name, Number(row.value)]));
}
