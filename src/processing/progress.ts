import type { Queryable } from '../db/database.js';
import type { LogCheckpoint } from '../store/event.js';
import type { Counters, RunContext } from './run-context.js';

/** Where a batch moves its run's checkpoint: these partitions, to `at(the batch's last event)`. */
export interface Checkpointing {
  partitions: readonly number[];
  at(last: LogCheckpoint): LogCheckpoint;
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
  await target.query(run.sql.saveProgress, [
    run.runId,
    entries.map(([name]) => name),
    entries.map(([, value]) => value),
    checkpointing.partitions,
    through.txOrder,
    through.position,
  ], { prepare: true });
}
