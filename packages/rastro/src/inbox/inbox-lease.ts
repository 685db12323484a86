import type { Database, Session } from '../db/database.js';

/** The lease of one inbox reader: while it is held, no other `rastro consume` reads the same durable or queue. */
export interface InboxLease {
  /** Resolves when the lease is gone: its connection was lost, so another reader may hold it now. */
  readonly lost: Promise<void>;
  release(): Promise<void>;
}

export interface InboxLeaseOptions {
  /** Called once when another reader holds the lease and this one stands by. */
  onStandby?: () => void;
  /** Aborting it ends the wait for the lease: the call then resolves `undefined`. */
  signal?: AbortSignal;
  /** How often a standing-by reader tries again, and the holder checks its connection. @defaultValue 1000 */
  checkEveryMs?: number;
}

const LEASE_KEY = `select pg_try_advisory_lock(hashtextextended($1, 0)) as held`;

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/**
 * Takes the lease named `name` (e.g. `rastro.inbox.<schema>.nats.<durable>`): a session-level
 * advisory lock on a connection of its own, so it is free the moment its holder dies. Waits,
 * standing by, while another reader holds it. One reader at a time per durable or queue is what
 * keeps each aggregate's messages in the order the broker holds them, redeliveries included.
 * Rejects while the database cannot be reached.
 */
export async function takeInboxLease(db: Database, name: string, options: InboxLeaseOptions = {}): Promise<InboxLease | undefined> {
  const every = options.checkEveryMs ?? 1000;
  const session: Session = await db.connect();
  let said = false;
  try {
    for (;;) {
      if (options.signal?.aborted) {
        await session.release();
        return undefined;
      }
      const { rows } = await session.query<{ held: boolean }>(LEASE_KEY, [name]);
      if (rows[0]?.held) break;
      if (!said) options.onStandby?.();
      said = true;
      await pause(every, options.signal);
    }
  } catch (err) {
    await session.release().catch(() => undefined);
    throw err;
  }
  let released = false;
  let timer: NodeJS.Timeout | undefined;
  const lost = new Promise<void>((resolve) => {
    const check = () => {
      if (released) return;
      session.query('select 1').then(
        () => void (timer = setTimeout(check, every)),
        () => resolve(),
      );
    };
    timer = setTimeout(check, every);
  });
  return {
    lost,
    async release() {
      released = true;
      clearTimeout(timer);
      await session.query('select pg_advisory_unlock(hashtextextended($1, 0))', [name]).catch(() => undefined);
      await session.release().catch(() => undefined);
    },
  };
}
