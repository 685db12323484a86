import type { Queryable, Transaction } from '../db/database.js';

/**
 * Wakes subscribers after appends commit. A NOTIFY sent inside the appending transaction would
 * serialize concurrent commits on PostgreSQL's notification-queue lock, so appends made by the
 * store notify afterwards, at most once per `intervalMs`, always including a trailing one so the
 * last append is announced. Lost notifications only delay readers until their next poll.
 */
export function createAppendNotifier(target: Queryable, channel: string, intervalMs = 10) {
  let lastSent = 0;
  let timer: NodeJS.Timeout | undefined;

  const send = () => {
    lastSent = Date.now();
    target.query('select pg_notify($1, $2)', [channel, '']).catch(() => undefined);
  };

  /** After an append committed outside a caller's transaction. */
  function appended(): void {
    if (timer) return;
    const wait = lastSent + intervalMs - Date.now();
    if (wait <= 0) return send();
    timer = setTimeout(() => {
      timer = undefined;
      send();
    }, wait);
    timer.unref();
  }

  return {
    appended,
    /**
     * Inside a transaction: the notification goes out once it commits. With rastro's own
     * transaction (which has `afterCommit`) it is sent after the commit, as `appended()` sends
     * it; in a caller's, a NOTIFY inside it, which PostgreSQL delivers at its commit.
     */
    async appendedIn(tx: Queryable & Pick<Transaction, 'afterCommit'>): Promise<void> {
      if (typeof tx.afterCommit === 'function') return tx.afterCommit(appended);
      await tx.query('select pg_notify($1, $2)', [channel, '']);
    },
  };
}
