import { quoteSchema } from '../db/schema-name.js';
import { ValidationError } from '../errors.js';
import type { LogCheckpoint } from '../store/event.js';
import type { EventStore } from '../store/event-store.js';
import { eventsChannel } from '../store/subscribe.js';
import { sweepAbandonedReservations } from './effect-admin.js';
import { validatePolicy, type EffectPolicy } from './policy.js';
import type { Processor } from './processor.js';
import { processEvents } from './process-events.js';
import { saveProgress, type Checkpointing } from './progress.js';
import { isAfter, loadCheckpoints, readRunBatch, WHOLE_LOG } from './read-batch.js';
import { openRunnerSession, type RunnerSession } from './runner-session.js';
import { Counters, type RunContext } from './run-context.js';
import { processingSql, type ProcessingSql } from './sql.js';

export interface LiveOptions {
  store: EventStore;
  policy: EffectPolicy;
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
  /** Called when a batch fails; the runner waits one poll interval and tries again. */
  onError?: (err: unknown) => void;
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

const HEARTBEAT_MS = 2000;

/** The partitions this runner holds, rebalanced so live runners of a processor share them evenly. */
class PartitionLeases {
  readonly owned = new Set<number>();
  private lastBalance = 0;

  constructor(
    private readonly runner: RunnerSession,
    private readonly sql: ProcessingSql,
    private readonly lockName: string,
    private readonly processor: string,
    private readonly count: number,
  ) {}

  async rebalance(force = false): Promise<void> {
    if (!force && Date.now() - this.lastBalance < HEARTBEAT_MS) return;
    this.lastBalance = Date.now();
    const { session, token } = this.runner;
    await session.query(this.sql.registerRunner, [this.processor, token]);
    await session.query(this.sql.forgetDeadRunners, [this.processor]);
    const { rows } = await session.query<{ n: number }>(this.sql.liveRunners, [this.processor]);
    const target = Math.ceil(this.count / Math.max(1, rows[0]?.n ?? 1));
    for (const partition of [...this.owned].sort((a, b) => b - a)) {
      if (this.owned.size <= target) break;
      await session.query(this.sql.unlockPartition, [this.lockName, partition]);
      this.owned.delete(partition);
    }
    for (let partition = 0; partition < this.count && this.owned.size < target; partition++) {
      if (this.owned.has(partition)) continue;
      const { rows: locked } = await session.query<{ locked: boolean }>(this.sql.tryLockPartition, [this.lockName, partition]);
      if (locked[0]?.locked) this.owned.add(partition);
    }
  }

  /** Forgets this runner; its partition locks go with its session. */
  async releaseAll(): Promise<void> {
    await this.runner.session.query(this.sql.forgetRunner, [this.processor, this.runner.token]).catch(() => undefined);
    this.owned.clear();
  }
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
export async function runLive(processor: Processor, options: LiveOptions): Promise<LiveRunner> {
  const policy = validatePolicy(options.policy);
  const count = options.partitions ?? 8;
  if (!Number.isInteger(count) || count < 1 || count > 1024) throw new ValidationError('partitions', 'must be an integer from 1 to 1024');
  const { store } = options;
  const db = store.db;
  const sql = processingSql(quoteSchema(store.schema));
  const runId = `live:${processor.name}`;
  const runner = await openRunnerSession(db, sql);
  const run: RunContext = {
    db, sql, processor, runId, mode: 'live', simulate: false, policy,
    ownerToken: runner.token, leaseMs: options.leaseMs ?? 5 * 60_000, effectConcurrency: options.effectConcurrency ?? 32,
  };
  await db.query(sql.startRun, [runId, processor.name, 'live', false, JSON.stringify(policy), null, null, null, null, null]);
  const leases = new PartitionLeases(runner, sql, `rastro.partition:${store.schema}:${processor.name}`, processor.name, count);
  const counters = new Counters();
  let stopped = false;
  let wake: (() => void) | undefined;
  const unlisten = await db.listen(eventsChannel(store.schema), () => wake?.());
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => resolve(), ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
      if (stopped) wake();
    });

  async function step(): Promise<boolean> {
    await leases.rebalance();
    const owned = [...leases.owned];
    if (owned.length === 0) return false;
    const checkpoints = await loadCheckpoints(db, sql, runId, owned);
    const after = [...checkpoints.values()].reduce((min, cp) => (isAfter(min, cp) ? cp : min));
    const limit = options.batchSize ?? 500;
    const input = await readRunBatch(run, WHOLE_LOG, after, limit, { count, owned });
    const read = input.events;
    // A partition whose checkpoint is ahead of the others has handled some of these already.
    const events = read.filter((event) => isAfter(event, checkpoints.get(event.partition)!));
    const last = read[read.length - 1];
    if (!last) return false;
    // Every owned partition moves past the whole read, also past events of partitions that had them already.
    const final = events[events.length - 1];
    const checkpointing: Checkpointing = { partitions: owned, at: (through) => (through === final ? last : through) };
    if (events.length > 0) {
      const batch = await processEvents(run, { ...input, events }, checkpointing);
      for (const [name, value] of batch.counters.entries()) counters.add(name, value);
    } else await saveProgress(run, db, new Counters(), checkpointing, last);
    return read.length === limit;
  }

  async function loop(): Promise<void> {
    let lastSweep = 0;
    try {
      await leases.rebalance(true);
      while (!stopped) {
        try {
          if (Date.now() - lastSweep > 60_000) {
            lastSweep = Date.now();
            await sweepAbandonedReservations(db, sql, run.leaseMs, runner.token);
          }
          if (!(await step())) await sleep(options.pollIntervalMs ?? 1000);
        } catch (err) {
          options.onError?.(err);
          await sleep(options.pollIntervalMs ?? 1000);
        }
      }
    } finally {
      await unlisten().catch(() => undefined);
      await leases.releaseAll();
      await runner.close();
    }
  }

  const done = loop();
  return {
    runId,
    get partitions() {
      return [...leases.owned];
    },
    counters,
    async stop() {
      stopped = true;
      wake?.();
      await done;
    },
    done,
  };
}
