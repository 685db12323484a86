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
 *
 * The marks hold only while the database's history goes on: a standby promoted behind its
 * primary (an asynchronous failover) lost the primary's last transactions, and hands their
 * transaction ids out again to new ones, below the marks. So the marks are forgotten when the
 * runner's session is renewed (every connection to a dead primary is lost) and when a read's
 * frontier is lower than one seen before, which on one server it never is.
 */
export class ScannedBelow {
  private readonly marks = new Map<number, LogCheckpoint>();
  private highest = -Infinity;
  private session: unknown;

  /** Forgets the marks when the runner's session is not the one they were read under. */
  under(session: unknown): void {
    if (session !== this.session) this.forget();
    this.session = session;
  }

  /**
   * After every read: whether its frontier (a tx_order) went on from the ones seen before. When
   * it did not, the marks are forgotten, and the read, which started from them, is to be done again.
   */
  continues(frontier: number | undefined): boolean {
    if (frontier === undefined) return true;
    const regressed = frontier < this.highest;
    if (regressed) this.forget();
    this.highest = frontier;
    return !regressed;
  }

  private forget(): void {
    this.marks.clear();
    this.highest = -Infinity;
  }

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
