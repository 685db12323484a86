import type { Database } from '../../db/database.js';
import type { ProcessingSql } from '../sql.js';

/** How often a replay records that it is alive; its liveness itself is its session's lock, exactly. */
const HEARTBEAT_MS = 2000;

/**
 * Records the replay's runner session on its run, so the run's status follows the session's
 * lock (running while held, dead once the process is gone), and its last sign of life every
 * couple of seconds (the time a dead run is dead since). `stop()` marks the run stopped: its
 * process ended it, it did not die.
 */
export async function holdRunAlive(db: Database, sql: ProcessingSql, runId: string, token: number): Promise<{ stop(): Promise<void> }> {
  await db.query(sql.holdRun, [runId, token]);
  let beat: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    beat = db.query(sql.runHeartbeat, [runId, token]).catch(() => undefined);
  }, HEARTBEAT_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await beat;
      await db.query(sql.runStopped, [runId, token]).catch(() => undefined);
    },
  };
}
