import type { Queryable } from '../db/database.js';

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

  return {
    /** After an append committed outside a caller's transaction. */
    appended(): void {
      if (timer) return;
      const wait = lastSent + intervalMs - Date.now();
      if (wait <= 0) return send();
      timer = setTimeout(() => {
        timer = undefined;
        send();
      }, wait);
      timer.unref();
    },
    /** Inside a caller's transaction: the notification goes out when it commits. */
    async appendedIn(tx: Queryable): Promise<void> {
      await tx.query('select pg_notify($1, $2)', [channel, '']);
    },
  };
}
