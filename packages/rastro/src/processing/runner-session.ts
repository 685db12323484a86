import { randomInt } from 'node:crypto';
import type { Database, Session } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/database-error.js';
import { RUNNER_LOCK_CLASS, type ProcessingSql } from './sql.js';

/**
 * A runner's identity in the database: a random token whose advisory lock it holds on its own
 * connection for as long as it lives. Its reservations carry the token, so when the lock is
 * gone, anyone can see the owner died and need not wait for the lease.
 */
export interface RunnerSession {
  /** The token of the current session; a renewed session has a new one. */
  readonly token: number;
  /** The database the session belongs to. */
  db: Database;
  readonly session: Session;
  /** True once the session's connection is known to be lost: its locks are gone, {@link renew} it. */
  readonly lost: boolean;
  /**
   * After a failure: checks the session's connection and, when it is lost, opens a new session
   * under a new token. Resolves true when it did: every session lock of the old one (partitions
   * among them) is gone, and to the database the old token is a runner that died. Rejects while
   * the database cannot be reached.
   */
  renew(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Ends the backend that still holds a token's lock after its client lost the connection (the
 * server had not noticed yet): its session locks, partitions among them, are free at once instead
 * of when the server's keepalive finds out. Only the backend holding that very lock is ended.
 */
const END_LOST_BACKEND = `select pg_terminate_backend(l.pid) from pg_locks l
  where l.locktype = 'advisory' and l.classid = ${RUNNER_LOCK_CLASS}::oid and l.objid = ($1)::oid and l.objsubid = 2
    and l.granted and l.pid <> pg_backend_pid()`;

interface LockedSession {
  token: number;
  session: Session;
  /** Gives the connection back to the pool, once: a lost session stays current until renewed, and may be found lost again. */
  release(): Promise<void>;
}

async function lockedSession(db: Database, sql: ProcessingSql): Promise<LockedSession> {
  const session = await db.connect();
  const token = randomInt(1, 2 ** 31 - 1);
  let released: Promise<void> | undefined;
  const release = () => (released ??= session.release());
  try {
    await session.query(sql.lockRunner, [token]);
  } catch (err) {
    await release();
    throw err;
  }
  return { token, session, release };
}

export async function openRunnerSession(db: Database, sql: ProcessingSql): Promise<RunnerSession> {
  let current = await lockedSession(db, sql);
  return {
    get token() {
      return current.token;
    },
    db,
    get session() {
      return current.session;
    },
    get lost() {
      return current.session.lost ?? false;
    },
    async renew() {
      // PGlite's session is the database itself: it cannot be lost.
      if (db.kind === 'pglite') return false;
      try {
        await current.session.query('select 1');
        return false;
      } catch (err) {
        if (!isDatabaseUnavailable(err)) throw err;
      }
      const lost = current;
      await lost.release().catch(() => undefined);
      const next = await lockedSession(db, sql);
      current = next;
      await next.session.query(END_LOST_BACKEND, [lost.token]).catch(() => undefined);
      return true;
    },
    async close() {
      // A pg session is destroyed on release, its locks with it; PGlite's one session lives on.
      await current.session.query(sql.unlockRunner, [current.token]).catch(() => undefined);
      await current.release();
    },
  };
}
