import { RunInProgressError, ValidationError } from '../errors.js';
import { sameJson } from './state-writes.js';
import type { EventStore } from '../store/event-store.js';
import type { EventMap } from '../store/event-types.js';
import { quoteSchema } from '../db/schema-name.js';
import { policyFor, type EffectPolicy } from './policy.js';
import type { Processor } from './processor.js';
import { countRange, type RunRange } from './read-batch.js';
import { openRunnerSession } from './runner-session.js';
import { PartitionLeases, partitionLockName } from './runners/partition-leases.js';
import { replayPartitions } from './runners/replay-partitions.js';
import { holdRunAlive } from './runners/run-heartbeat.js';
import { newRunId, RUN_ID } from './run-id.js';
import { Counters, type RunContext } from './run-context.js';
import { processingSql } from './sql.js';

export interface ReplayOptions<Effect extends string = string> {
  store: EventStore<any>;
  /** Re-using a run id continues that run from its checkpoint. @defaultValue `replay-<time>-<random>` */
  runId?: string;
  /** Events that occurred at or after this time. */
  from?: Date;
  /** Events that occurred before this time. */
  to?: Date;
  /** Or a position range, inclusive. */
  fromPosition?: number;
  toPosition?: number;
  /** A rule per effect type the processor declares (see {@link policyFor}). */
  policy: EffectPolicy<Effect>;
  simulate?: boolean;
  /** Events per batch: one reservation round trip, one probe, one commit per batch. @defaultValue 1000 */
  batchSize?: number;
  /**
   * Streams are spread over this many partitions, each with a checkpoint of its own. Every
   * process replaying the same run id takes a share of them (a session lock each), so a run can
   * use several processes or machines. Fixed when the run starts. @defaultValue 8
   */
  partitions?: number;
  /**
   * At most this many events per second in this process (each process of a shared run has its
   * own): the replay leaves the database and the cores to the live traffic beside it, and takes
   * longer. @defaultValue no limit
   */
  maxRate?: number;
  /**
   * While a live runner or relay of the store's schema is running (checked every second), read
   * no batch ahead: the replay keeps about one core busy instead of every core, and the live
   * traffic keeps its latency; the replay takes longer. With nothing live beside it, it reads
   * ahead either way. @defaultValue true
   */
  yieldToLive?: boolean;
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
export async function runReplay<E extends EventMap, Effect extends string>(typed: Processor<E, Effect>, options: ReplayOptions<Effect>): Promise<RunSummary> {
  const processor = typed as unknown as Processor;
  const runId = options.runId ?? newRunId('replay');
  if (!RUN_ID.test(runId) || runId.startsWith('live:')) throw new ValidationError('runId', 'must be 1 to 100 letters, digits, dots, dashes, colons or underscores, not starting with live:');
  const policy = policyFor(processor, options.policy);
  const range = validateRange(options);
  const { store } = options;
  const db = store.db;
  const sql = processingSql(quoteSchema(store.schema));
  if (options.maxRate !== undefined && !(typeof options.maxRate === 'number' && Number.isFinite(options.maxRate) && options.maxRate > 0)) {
    throw new ValidationError('maxRate', 'must be a positive number of events per second');
  }
  if (options.yieldToLive !== undefined && typeof options.yieldToLive !== 'boolean') throw new ValidationError('yieldToLive', 'must be true or false');
  const requested = options.partitions ?? 8;
  if (!Number.isInteger(requested) || requested < 1 || requested > 1024) throw new ValidationError('partitions', 'must be an integer from 1 to 1024');
  const batchSize = options.batchSize ?? 1000;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new ValidationError('batchSize', 'must be an integer from 1 to 10000');
  const total = await countRange(db, sql, processor, range);
  // A run started before runs had partitions has one checkpoint, partition 0: it stays at one.
  const existing = (await db.query<{ partitions: number | null; policy: unknown; alive: boolean; processor: string; simulate: boolean }>(sql.getRun, [runId])).rows[0];
  // Runners of one run share its partitions: one joining with another policy would decide effects otherwise.
  if (existing?.alive && existing.processor === processor.name && existing.simulate === (options.simulate ?? false) && !sameJson(existing.policy, policy)) {
    throw new RunInProgressError(runId);
  }
  const { rows } = await db.query<StartedRun>(sql.startRun, [
    runId, processor.name, 'replay', options.simulate ?? false, JSON.stringify(policy), range.from, range.to, range.fromPosition, range.toPosition, total, null,
    existing ? (existing.partitions ?? 1) : requested,
  ]);
  const started = rows[0]!;
  if (started.processor !== processor.name || started.simulate !== (options.simulate ?? false)) {
    throw new ValidationError('runId', `run ${runId} belongs to processor ${started.processor}${started.simulate ? ' (simulate)' : ''}; choose another run id`);
  }
  const count = started.partitions ?? 1;
  const runner = await openRunnerSession(db, sql);
  const group = `replay:${runId}`;
  const lockName = partitionLockName(store.schema, group);
  const leases = new PartitionLeases(runner, sql, lockName, group, count);
  let beating: { stop(): Promise<void> } | undefined;
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await beating?.stop();
    await leases.releaseAll();
    await runner.close();
  };
  try {
    beating = await holdRunAlive(db, sql, runId, runner.token);
    const run: RunContext = {
      db,
      // A simulate run's failures go to its own record, not to the operational queue.
      sql: options.simulate ? processingSql(quoteSchema(store.schema), { simulate: true }) : sql,
      schema: store.schema,
      processor,
      decoder: { ...store.decoder, types: processor.events ?? store.decoder.types },
      runId,
      mode: 'replay',
      simulate: options.simulate ?? false,
      policy,
      // A renewed session has a new token: reservations from now on carry it.
      get ownerToken() {
        return runner.token;
      },
      leaseMs: options.leaseMs ?? 5 * 60_000,
      effectConcurrency: options.effectConcurrency ?? 32,
    };
    const counters = new Counters();
    let done = 0;
    await replayPartitions({
      run, range, runner, leases, lockName, commitLockName: `${lockName}:commit`,
      batchSize,
      pace: options.maxRate === undefined ? undefined : paceAt(options.maxRate),
      yieldToLive: options.yieldToLive ?? true,
      onBatch(events, batch) {
        for (const [name, value] of batch.entries()) counters.add(name, value);
        done += events;
        options.onProgress?.({ done, total, counters });
      },
    });
    // Every partition is done: the counters are final. The run shows completed last, once this
    // runner has let go of everything, so whoever sees it completed finds the replay returned.
    await release();
    const final = await runCounters(db, sql, runId);
    await db.query(sql.completeRun, [runId]);
    return { runId, total, counters: final };
  } finally {
    await release();
  }
}

/** Waits after each batch until the events handled so far took at least `rate` per second. */
function paceAt(rate: number): (events: number) => Promise<void> {
  const started = performance.now();
  let handled = 0;
  return async (events) => {
    handled += events;
    const wait = started + (handled / rate) * 1000 - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  };
}

interface StartedRun {
  processor: string;
  simulate: boolean;
  partitions: number | null;
}

export async function runCounters(db: EventStore['db'], sql: ReturnType<typeof processingSql>, runId: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ name: string; value: number }>(sql.counters, [runId]);
  return Object.fromEntries(rows.map((row) => [row.name, Number(row.value)]));
}
