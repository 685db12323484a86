import { randomInt } from 'node:crypto';
import type { Database, Session } from '../db/database.js';
import type { ProcessingSql } from './sql.js';

/**
 * A runner's identity in the database: a random token whose advisory lock it holds on its own
 * connection for as long as it lives. Its reservations carry the token, so when the lock is
 * gone, anyone can see the owner died and need not wait for the lease.
 */
export interface RunnerSession {
  token: number;
  /** The database the session belongs to. */
  db: Database;
  session: Session;
  close(): Promise<void>;
}

export async function openRunnerSession(db: Database, sql: ProcessingSql): Promise<RunnerSession> {
  const session = await db.connect();
  const token = randomInt(1, 2 ** 31 - 1);
  try {
    await session.query(sql.lockRunner, [token]);
  } catch (err) {
    await session.release();
    throw err;
  }
  return {
    token,
    db,
    session,
    async close() {
      // A pg session is destroyed on release, its locks with it; PGlite's one session lives on.
      await session.query(sql.unlockRunner, [token]).catch(() => undefined);
      await session.release();
    },
  };
}
