import { LOG_START, type LogCheckpoint } from '../../store/event.js';
import { sweepAbandonedReservations } from '../effect-admin.js';
import { ParkedStreamReleasedError } from '../parked-streams.js';
import { processEvents } from '../process-events.js';
import { PartitionLostError, saveProgress, type Checkpointing, type HeldPartitions } from '../progress.js';
import { handledTypes, isAfter, loadCheckpoints, readRunBatch, type RunEvents, type RunRange } from '../read-batch.js';
import type { RunnerSession } from '../runner-session.js';
import { Counters, type RunContext } from '../run-context.js';
import type { PartitionLeases } from './partition-leases.js';

/** How often a runner with work looks for joiners and dead runners (a holder gives up its surplus). */
const REBALANCE_MS = 1000;
/** How often a replay that yields to live traffic looks for live runners and relays. */
const LIVE_CHECK_MS = 1000;
/** The wait when there is nothing to do yet: events held back by an open transaction, or partitions other runners hold. */
const IDLE_MS = 100;

export interface ReplayPartitionsOptions {
  run: RunContext;
  range: RunRange;
  runner: RunnerSession;
  leases: PartitionLeases;
  /** The lock names of the leases' partitions and of their commit holds. */
  lockName: string;
  commitLockName: string;
  batchSize: number;
  /** Called after every batch this runner handled. */
  onBatch(events: number, counters: Counters): void;
  /** Resolves when the next batch may start (a rate limit). */
  pace?: (events: number) => Promise<void>;
  /**
   * While a live runner or relay of the schema runs, read no batch ahead: the replay then keeps
   * about one core busy (its process or its database session, in turn), not every core.
   */
  yieldToLive: boolean;
}

const sameCheckpoint = (a: LogCheckpoint, b: LogCheckpoint) => a.txOrder === b.txOrder && a.position === b.position;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether `later`, read after the checkpoint `input` was read after with its first `limit`
 * events skipped, holds exactly the events that follow `input`'s. Every event below a frontier is
 * visible below it (an event committed later has a tx_order at or above the frontier of any
 * snapshot taken before), so with `input` full and `later`'s frontier no lower, the events `later`
 * skipped are `input`'s: any event it sees that `input` did not is at or above `input`'s
 * frontier, after all of `input`'s events.
 */
export function followsOn(input: RunEvents, later: RunEvents, limit: number): boolean {
  return input.events.length === limit && input.frontier !== undefined && later.frontier !== undefined && later.frontier >= input.frontier;
}

/**
 * Replays a run's range over its partitions, shared with every other runner of the same run id
 * (in this process or others): each stream belongs to one partition, each partition to one runner
 * at a time (a session lock), with a checkpoint of its own. A runner handles its partitions'
 * events in log order, and commits a batch only while it still holds every partition of it. It
 * returns when no partition of the run has events of the range left, whoever handled them.
 */
export async function replayPartitions(options: ReplayPartitionsOptions): Promise<void> {
  const { run, range, runner, leases } = options;
  const { db, sql } = run;
  const count = leases.count;
  const all = Array.from({ length: count }, (_, partition) => partition);
  const types = handledTypes(run.processor);
  const rangeValues = [types, range.from?.toISOString() ?? null, range.to?.toISOString() ?? null, range.fromPosition, range.toPosition];
  /** Partitions with events of the range left; `since(p)`, where known, the tx_order below which p has none left. */
  const partitionsLeft = async (partitions: number[], since: (partition: number) => number | undefined) =>
    (await db.query<{ partition: number }>(sql.partitionsLeft, [...rangeValues, partitions, run.runId, count, partitions.map((p) => since(p) ?? null)]))
      .rows.map((row) => row.partition);

  let owned: number[] = [];
  let held: HeldPartitions | undefined;
  /** Checkpoints of the partitions this runner holds, as its batches moved them. */
  let checkpoints = new Map<number, LogCheckpoint>();
  /**
   * Held partitions with no event of the range left after their checkpoint, each with the frontier
   * of the read that found none: an event it could not see yet is at or above it.
   */
  const finished = new Map<number, number>();
  let saving: Promise<void> = Promise.resolve();
  let next: Promise<RunEvents> | undefined;
  /**
   * Made with `next`, after the same checkpoint, less its first `batchSize` events: it stands for
   * the read after `next` only when that one was full and the frontier it read below is no lower
   * (see {@link followsOn}). Taken and dropped with `next`.
   */
  let ahead: Promise<RunEvents> | undefined;
  /** Streams the last two batches parked: a read made before their commits does not know them. */
  let parkedStreams = new Set<string>();
  let parkedBefore = new Set<string>();
  /**
   * The projections the handlers wrote to so far: each read brings the rows of them its events
   * wrote last (in a replay, mostly the rows its handlers write again), and the batch asks the
   * probe only for the others. A read made before the last two batches committed holds the
   * rows they wrote as they were: those are probed again.
   */
  const preload = new Set<string>();
  let wrote: Set<string>[] = [];
  let balancedAt = 0;
  let liveTraffic = false;
  let liveCheckedAt = Number.NEGATIVE_INFINITY;

  const settle = async () => {
    const pending = saving;
    saving = Promise.resolve();
    await pending;
  };
  /** The runner's session was renewed: its partitions went with the old one. */
  const forgetAll = () => {
    leases.forget();
    checkpoints = new Map();
    finished.clear();
  };
  const discardRead = () => {
    next?.catch(() => undefined);
    next = undefined;
    ahead?.catch(() => undefined);
    ahead = undefined;
  };

  /** Takes this runner's share of the partitions; a partition taken over starts from its committed checkpoint. */
  async function rebalance(): Promise<void> {
    // A partition is given up only with nothing of it in flight: a save still running would land
    // after its next holder read the checkpoint.
    await settle();
    discardRead();
    balancedAt = Date.now();
    if (runner.lost && (await runner.renew())) forgetAll();
    await leases.rebalance(true);
    const now = [...leases.owned].sort((a, b) => a - b);
    const taken = now.filter((partition) => !checkpoints.has(partition));
    for (const partition of [...checkpoints.keys()]) {
      if (!leases.owned.has(partition)) {
        checkpoints.delete(partition);
        finished.delete(partition);
      }
    }
    if (taken.length > 0) {
      // The previous holder may be committing a batch of these partitions still: wait for it.
      await db.query(sql.waitForPartitionCommits, [options.commitLockName, taken]);
      // Its reservations are abandoned once it is gone: settle them before its events are reached again.
      await sweepAbandonedReservations(db, sql, run.leaseMs, runner.token);
      for (const [partition, checkpoint] of await loadCheckpoints(db, sql, run.runId, taken)) checkpoints.set(partition, checkpoint);
    }
    owned = now;
    const { rows } = await runner.session.query<{ pid: number }>('select pg_backend_pid() as pid');
    held = { lockName: options.lockName, commitLockName: options.commitLockName, sessionPid: rows[0]!.pid };
  }

  // Holding every partition, all at one checkpoint (one process alone), the read needs no partition
  // filter. Only such a read is read ahead: a filtered one scans the other partitions' events too,
  // while the processes sharing the run keep the cores busy anyway.
  const readsTogether = (work: number[], after: LogCheckpoint) =>
    work.length === count && work.every((partition) => sameCheckpoint(checkpoints.get(partition) ?? LOG_START, after));
  const readAfter = (work: number[], after: LogCheckpoint, offset = 0) =>
    readRunBatch(run, range, after, options.batchSize, {
      offset,
      preload: [...preload],
      partitions: readsTogether(work, after) ? undefined : { count, owned: work },
    });

  await rebalance();
  for (;;) {
    try {
      if (await step()) return;
    } catch (err) {
      discardRead();
      if (err instanceof ParkedStreamReleasedError) {
        // A retry lifted a block this batch parked events behind: read the batch again, from
        // what is committed.
        await settle();
        checkpoints = await loadCheckpoints(db, sql, run.runId, owned);
        continue;
      }
      if (!(err instanceof PartitionLostError)) throw err;
      // Another runner holds a partition of this batch now: its state rolled back, and the
      // partition's new holder handles its events. Take the share again from what is committed.
      saving = Promise.resolve();
      if (await runner.renew()) forgetAll();
      await rebalance();
    }
  }

  /**
   * Whether the runner holds exactly its share of the partitions (the check registers it, as a
   * heartbeat): then a rebalance would give up none and take none, and its saves and the reads
   * it made ahead stay good, so the replay goes on without a pause.
   */
  async function holdsShare(): Promise<boolean> {
    if (runner.lost || held === undefined) return false;
    balancedAt = Date.now();
    return leases.owned.size === (await leases.share());
  }

  /** One batch, or a wait; resolves true when the whole run is done. */
  async function step(): Promise<boolean> {
    if (Date.now() - balancedAt >= REBALANCE_MS && !(await holdsShare())) await rebalance();
    if (options.yieldToLive && Date.now() - liveCheckedAt >= LIVE_CHECK_MS) {
      liveCheckedAt = Date.now();
      liveTraffic = (await db.query<{ live: boolean }>(sql.liveTraffic)).rows[0]!.live;
    }
    const work = owned.filter((partition) => !finished.has(partition));
    if (work.length === 0) {
      await settle();
      const left = await partitionsLeft(all, (partition) => finished.get(partition));
      if (left.length === 0) return true;
      // An event of the range committed since one of this runner's partitions was found done
      // (a late event, or live traffic during a replay of the whole log): read that one again.
      for (const partition of left) finished.delete(partition);
      // Partitions other runners hold are still going, or one's runner died: take over what is free.
      await sleep(IDLE_MS);
      await rebalance();
      return false;
    }
    const from = work.map((partition) => checkpoints.get(partition) ?? LOG_START).reduce((min, cp) => (isAfter(min, cp) ? cp : min));
    const reading = next ?? readAfter(work, from);
    const following = ahead;
    next = undefined;
    ahead = undefined;
    const input = await reading;
    const read = input.events;
    const last = read[read.length - 1];
    if (!last) {
      // Done with a partition only when no event of its range is left after its saved checkpoint;
      // events held back by an open transaction are read again shortly.
      await settle();
      // The read saw none below its frontier: any left is at or above it, committed since or held back.
      const left = new Set(await partitionsLeft(work, () => input.frontier));
      for (const partition of work) if (!left.has(partition)) finished.set(partition, input.frontier ?? 0);
      if (left.size > 0) await sleep(IDLE_MS);
      return false;
    }
    // A partition whose checkpoint is ahead of the others (taken over) has handled some of these already.
    const events = read.filter((event) => isAfter(event, checkpoints.get(event.partition) ?? LOG_START));
    for (const stream of parkedStreams) input.blocked.add(stream);
    for (const stream of parkedBefore) input.blocked.add(stream);
    const final = events[events.length - 1];
    // Every partition read moves past the whole read, also past events a partition had handled already.
    const checkpointing: Checkpointing = { partitions: work, at: (through) => (through === final ? last : through), held };
    // The next read starts now: reading needs none of this batch's state. A partition already
    // past the read keeps its checkpoint: moved back, it would handle its events again.
    for (const partition of work) {
      const checkpoint = checkpoints.get(partition) ?? LOG_START;
      if (isAfter(last, checkpoint)) checkpoints.set(partition, last);
    }
    // Two reads go on while this batch runs: the next one, and the one after it, which is
    // used if it turns out to follow on (a read each batch keeps the log's pace only if the
    // batch waits for none of them). Beside live traffic, none: the next batch reads after this one.
    if (!liveTraffic) {
      next = following
        ? following.then((later) => (followsOn(input, later, options.batchSize) ? later : readAfter(work, last)), () => readAfter(work, last))
        : readAfter(work, last);
      next.catch(() => undefined);
      if (read.length === options.batchSize && readsTogether(work, last)) {
        ahead = readAfter(work, last, options.batchSize);
        ahead.catch(() => undefined);
      }
    }
    if (events.length === 0) {
      await settle();
      await saveProgress(run, db, new Counters(), checkpointing, last);
    } else {
      const batch = await processEvents(run, { ...input, events }, checkpointing, { previous: saving }, wrote);
      // The rows of the last two batches that wrote any: the next reads were made before their commits.
      if (batch.rows) wrote = [...wrote.slice(-1), batch.rows];
      for (const projection of batch.projections ?? []) preload.add(projection);
      saving = batch.saving ?? Promise.resolve();
      saving.catch(() => undefined);
      parkedBefore = parkedStreams;
      parkedStreams = batch.parkedStreams;
      options.onBatch(events.length, batch.counters);
    }
    await options.pace?.(events.length);
    return false;
  }
}
