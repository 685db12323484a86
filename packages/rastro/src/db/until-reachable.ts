import { isDatabaseUnavailable } from './database-error.js';

/** One failed attempt to reach the database at start-up, and when the next one is made. */
export interface StartAttempt {
  /** 1 for the first attempt. */
  attempt: number;
  /** Why it failed: the unavailable error's message (no host, no statement). */
  reason: string;
  /** The wait before the next attempt. */
  retryInMs: number;
}

export interface UntilReachableOptions {
  /** Called after each attempt that found the database unreachable, before the wait. */
  onRetry?: (attempt: StartAttempt) => void | Promise<void>;
  /** Aborting it ends the wait: the call then resolves `undefined`. */
  signal?: AbortSignal;
  /** @defaultValue 500 */
  firstDelayMs?: number;
  /** @defaultValue 10000 */
  maxDelayMs?: number;
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Runs `open` until it succeeds, waiting between attempts (doubling, up to `maxDelayMs`) while it
 * fails because the database cannot be reached: refused, timed out, starting up, out of
 * connection slots. Any other failure (a wrong password, a missing database, a bad schema name)
 * is a configuration error and rejects at once. Resolves `undefined` when `signal` aborts first.
 *
 * @example
 * ```ts
 * const services = await untilDatabaseReachable(() => openServices(config), {
 *   onRetry: ({ attempt, reason, retryInMs }) => log.warn({ attempt, retryInMs }, reason),
 * })
 * ```
 */
export async function untilDatabaseReachable<T>(open: () => Promise<T>, options: UntilReachableOptions = {}): Promise<T | undefined> {
  const first = options.firstDelayMs ?? 500;
  const max = options.maxDelayMs ?? 10_000;
  for (let attempt = 1; ; attempt++) {
    if (options.signal?.aborted) return undefined;
    try {
      return await open();
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      const retryInMs = Math.min(max, first * 2 ** Math.min(attempt - 1, 20));
      await options.onRetry?.({ attempt, reason: (err as Error).message, retryInMs });
      await pause(retryInMs, options.signal);
    }
  }
}
