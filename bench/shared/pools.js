// pg pools in a bench child process. pg-pool re-emits an error of any idle connection as an
// 'error' event on the pool, and an 'error' event with no listener kills the process. Worse,
// `pool.end()` resolves as soon as the pool has let go of its connections, before their sockets
// have closed: a database dropped `with (force)` right after it terminates those connections,
// and their FATAL "terminating connection due to administrator command" arrives on the pool.
//
// Every pool a contender opens is guarded here: an error while the contender is at work fails
// it (through `poolFailure`, which runContender and serveChild watch), naming the pool; once the
// contender has begun to close, a terminated connection is expected and ignored, and `end()`
// waits until every connection of the pool has closed its socket.

let failPool;
/** Rejects with the first error a guarded pool reports while its contender is at work. */
export const poolFailure = new Promise((_, reject) => {
  failPool = reject;
});
poolFailure.catch(() => undefined); // awaited by whoever runs the child; never unhandled

/**
 * An error handler for a pool labelled `label`: `onError` fails the contender until `closing()`
 * has been called, then ignores what it gets. For pools the bench cannot reach itself (rastro's
 * `openDatabase({ onError })`).
 */
export function poolErrors(label) {
  let closing = false;
  return {
    onError(err) {
      if (closing) return;
      failPool(new Error(`${label}: a pooled connection failed while the bench was at work: ${err?.message ?? err}`, { cause: err }));
    },
    closing() {
      closing = true;
    },
  };
}

/** `promise`, or a rejection with `describe()` if it has not settled after `ms`. */
function within(promise, ms, describe) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(describe())), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Guards a `pg.Pool` right after it is created (before its first connection): listens for its
 * errors and tracks its connections. `end()` ends the pool and resolves once every connection it
 * opened has closed its socket, so nothing of it is left for a later `drop database` to terminate.
 */
export function guardPool(pool, label) {
  const errors = poolErrors(label);
  const open = new Set();
  let allClosed;
  pool.on('error', errors.onError);
  pool.on('connect', (client) => open.add(client));
  // pg-pool emits 'remove' once a connection's socket has closed.
  pool.on('remove', (client) => {
    open.delete(client);
    if (open.size === 0) allClosed?.();
  });
  let ended;
  return {
    pool,
    end(timeoutMs = 10_000) {
      ended ??= within(
        (async () => {
          errors.closing();
          // Resolves once every connection is back in the pool and let go of, not yet closed.
          await pool.end();
          if (open.size > 0) await new Promise((resolve) => (allClosed = resolve));
        })(),
        timeoutMs,
        () => `${label}: ${open.size} of its connection(s) still open (or checked out) ${timeoutMs / 1000} s after the pool was ended`,
      );
      return ended;
    },
  };
}
