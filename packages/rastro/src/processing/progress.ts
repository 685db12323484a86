import type { Queryable } from '../db/database.js';
import type { LogCheckpoint } from '../store/event.js';
import type { Counters, RunContext } from './run-context.js';

/**
 * A batch of a shared replay did not commit: one of its partitions is no longer held by this
 * runner (its session was lost, or another runner took the partition over). Its state rolled
 * back; the partition's holder handles its events.
 */
export class PartitionLostError extends Error {
  constructor(readonly runId: string) {
    super(`a partition of run ${runId} is no longer held by this runner`);
  }
}

/** Where a batch moves its run's checkpoint: these partitions, to `at(the batch's last event)`. */
export interface Checkpointing {
  partitions: readonly number[];
  at(last: LogCheckpoint): LogCheckpoint;
  /** The partitions are session locks the runner must still hold when the batch commits (a shared replay). */
  held?: HeldPartitions;
}

/** Partitions held as session locks: their lock name, the holding session's pid, their commit hold. */
export interface HeldPartitions {
  lockName: string;
  commitLockName: string;
  sessionPid: number;
}

/** No checkpoint moves: re-running parked events. */
export const NO_CHECKPOINT: Checkpointing = { partitions: [], at: (last) => last };

/** Adds a batch's counters to its run and moves the checkpoint, in one statement on `target`. */
export async function saveProgress<Name extends string>(
  run: Pick<RunContext, 'sql' | 'runId'>,
  target: Queryable,
  counters: Counters<Name>,
  checkpointing: Checkpointing,
  last: LogCheckpoint,
): Promise<void> {
  const entries = counters.entries();
  const through = checkpointing.at(last);
  const { held } = checkpointing;
  if (held) {
    const { rows } = await target.query<{ held: boolean }>(run.sql.saveHeldProgress, [
      run.runId, entries.map(([name]) => name), entries.map(([, value]) => value), checkpointing.partitions,
      through.txOrder, through.position, held.lockName, held.sessionPid, held.commitLockName,
    ], { prepare: true });
    if (!rows[0]?.held) throw new PartitionLostError(run.runId);
    return;
  }
  await target.query(run.sql.saveProgress, [
    run.runId,
    entries.map(([name]) => name),
    entries.map(([, value]) => value),
    checkpointing.partitions,
    through.txOrder,
    through.position,
  ], { prepare: true });
}
