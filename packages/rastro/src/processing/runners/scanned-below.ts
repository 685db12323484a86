import type { LogCheckpoint } from '../../store/event.js';
import { isAfter } from '../read-batch.js';

/**
 * How far a live runner has read its partitions and found none of its events: a read that
 * returns nothing proves that no event of its types lies below the frontier it read to, in the
 * partitions it read, and none can be committed there later (the no-skip rule). The next read
 * starts there instead of at the checkpoint, which only moves when the runner handles an event:
 * a processor of rare event types would otherwise read every event appended since its last one,
 * at every wake-up, and each read would cost more as the log grows. Kept in memory: a runner
 * that starts reads from its checkpoints once.
 */
export class ScannedBelow {
  private readonly marks = new Map<number, LogCheckpoint>();

  /** After a read of `partitions` that found nothing below `frontier` (a tx_order). */
  record(partitions: readonly number[], frontier: number | undefined): void {
    if (frontier === undefined) return;
    const mark = { txOrder: frontier - 1, position: Number.MAX_SAFE_INTEGER };
    for (const partition of partitions) {
      const known = this.marks.get(partition);
      if (!known || isAfter(mark, known)) this.marks.set(partition, mark);
    }
  }

  /** The checkpoints, each raised to where its partition was read to without finding an event. */
  raise(checkpoints: Map<number, LogCheckpoint>): Map<number, LogCheckpoint> {
    for (const [partition, checkpoint] of checkpoints) {
      const mark = this.marks.get(partition);
      if (mark && isAfter(mark, checkpoint)) checkpoints.set(partition, mark);
    }
    return checkpoints;
  }
}
