import type { Queryable, Transaction } from '../db/database.js';

/** The longest payload naming the appended types; past it the notification names none. */
const MAX_PAYLOAD = 2000;

/**
 * The event types a notification on the events channel names, or undefined when it names none
 * (a notification from an older rastro, or too many types): then any reader may have events.
 */
export function appendedTypes(payload: string): string[] | undefined {
  if (payload === '') return undefined;
  try {
    const types: unknown = JSON.parse(payload);
    return Array.isArray(types) && types.every((type) => typeof type === 'string') ? types : undefined;
  } catch {
    return undefined;
  }
}

/** The payload naming `types`: empty (any type) when they are unknown or too many to name. */
function payloadOf(types: Set<string> | undefined): string {
  if (types === undefined) return '';
  const payload = JSON.stringify([...types]);
  return payload.length > MAX_PAYLOAD ? '' : payload;
}

/**
 * Wakes subscribers after appends commit. A NOTIFY sent inside the appending transaction would
 * serialize concurrent commits on PostgreSQL's notification-queue lock, so appends made by the
 * store notify afterwards, at most once per `intervalMs`, always including a trailing one so the
 * last append is announced. Lost notifications only delay readers until their next poll. A
 * notification names the event types appended since the last one (see {@link appendedTypes}),
 * so that a reader of other types need not wake.
 */
export function createAppendNotifier(target: Queryable, channel: string, intervalMs = 10) {
  let lastSent = 0;
  let timer: NodeJS.Timeout | undefined;
  // The types appended since the last notification; undefined once an append named none.
  let types: Set<string> | undefined = new Set();

  const send = () => {
    lastSent = Date.now();
    const payload = payloadOf(types);
    types = new Set();
    target.query('select pg_notify($1, $2)', [channel, payload]).catch(() => undefined);
  };

  /** After an append of events of `appendedTypes` (unknown when not given) committed outside a caller's transaction. */
  function appended(appendedTypes?: readonly string[]): void {
    if (appendedTypes === undefined) types = undefined;
    else for (const type of appendedTypes) types?.add(type);
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
    async appendedIn(tx: Queryable & Pick<Transaction, 'afterCommit'>, appendedTypes?: readonly string[]): Promise<void> {
      if (typeof tx.afterCommit === 'function') return tx.afterCommit(() => appended(appendedTypes));
      await tx.query('select pg_notify($1, $2)', [channel, payloadOf(appendedTypes && new Set(appendedTypes))]);
    },
  };
}
