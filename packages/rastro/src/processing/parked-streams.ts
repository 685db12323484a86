import type { Database, Queryable } from '../db/database.js';
import { openRunnerSession, type RunnerSession } from './runner-session.js';
import type { ProcessingSql } from './sql.js';

/**
 * A batch read a stream as blocked by a parked event, but by its commit the block was lifted (a
 * retry handled the parked events): its events must be handled, not parked behind nothing. The
 * batch rolls back and its runner reads it again.
 */
export class ParkedStreamReleasedError extends Error {
  constructor(readonly streams: string[]) {
    super(`parked streams were retried while this batch ran: ${streams.length}`);
    this.name = 'ParkedStreamReleasedError';
  }
}

/** The key a run's parked-stream holds are taken on: run ids are per schema. */
export function parkedHoldKey(schema: string, runId: string): string {
  return `rastro.parked:${schema}:${runId}`;
}

/**
 * First in a transaction that parks events behind streams it read as blocked: waits for any
 * retry of those streams to end, then checks they are still parked. Throws
 * {@link ParkedStreamReleasedError} if one is not.
 */
export async function holdParkedStreams(tx: Queryable, sql: ProcessingSql, holdKey: string, runId: string, streams: string[]): Promise<void> {
  if (streams.length === 0) return;
  await tx.query(sql.holdParkedStreams, [holdKey, streams]);
  const { rows } = await tx.query<{ stream_id: string }>(sql.releasedStreams, [runId, streams]);
  if (rows.length > 0) throw new ParkedStreamReleasedError(rows.map((row) => row.stream_id));
}

/**
 * Runs `fn` holding a parked stream for a retry, on a runner session of its own (passed to `fn`,
 * whose token a retry's reservations carry). The hold and the session end with `fn`.
 */
export async function holdingParkedStream<T>(db: Database, sql: ProcessingSql, holdKey: string, streamId: string, fn: (runner: RunnerSession) => Promise<T>): Promise<T> {
  const runner = await openRunnerSession(db, sql);
  try {
    await runner.session.query(sql.holdParkedStreamForRetry, [holdKey, streamId]);
    try {
      return await fn(runner);
    } finally {
      // PGlite's session outlives the runner: the hold must be let go of explicitly.
      await runner.session.query(sql.releaseParkedStreamForRetry, [holdKey, streamId]).catch(() => undefined);
    }
  } finally {
    await runner.close();
  }
}
