import { performance } from 'node:perf_hooks';

/** Seconds `fn` takes. */
export async function secondsOf(fn) {
  const start = performance.now();
  await fn();
  return (performance.now() - start) / 1000;
}

/**
 * Runs `clients` loops of `op(client)` until `durationMs` has passed and returns operations per
 * second. Each loop awaits its operation before starting the next, like a client with one
 * connection; operations in flight at the deadline finish and count.
 */
export async function opsPerSecond({ clients, durationMs, op }) {
  let done = 0;
  const start = performance.now();
  const deadline = start + durationMs;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (performance.now() < deadline) {
        await op(client);
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
