import { performance } from 'node:perf_hooks';
import { opsPerSecond, secondsOf } from '../shared/measure.js';

/** Sizes shared by every contender, so each one does the same work. */
export const WORKLOAD = Object.freeze({
  batch: { size: 100, batches: 1000, warmupBatches: 20 },
  read: { events: 100_000, warmupEvents: 10_000, pageSize: Number(process.env.BENCH_PAGE_SIZE ?? 1000) },
  single: { durationMs: Number(process.env.BENCH_DURATION_MS ?? 5000), streamsPerClient: 100 },
});

/** A small order event, about 150 bytes of JSON. */
export function orderEvent(n) {
  return {
    type: 'order.placed',
    data: { orderId: `order-${n}`, customerId: `customer-${n % 997}`, amountCents: 1200 + (n % 100), currency: 'EUR', lines: [{ sku: `sku-${n % 50}`, quantity: 2 }] },
  };
}

async function batchAppend(store) {
  const { size, batches, warmupBatches } = WORKLOAD.batch;
  const batch = (b) => Array.from({ length: size }, (_, i) => orderEvent(b * size + i));
  for (let b = 0; b < warmupBatches; b += 1) await store.append(`warmup-${b}`, 0, batch(b));
  const seconds = await secondsOf(async () => {
    for (let b = 0; b < batches; b += 1) await store.append(`batch-${b}`, 0, batch(b));
  });
  return (batches * size) / seconds;
}

const HELD_BACK_TIMEOUT_MS = 60_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads `total` events page by page; returns the milliseconds spent waiting on empty pages.
 * rastro delivers only events below the oldest transaction running in the cluster, so another
 * client's open transaction (on the same PostgreSQL) can hold a page back until it ends: an empty
 * page is waited out, not taken for the end of the log.
 */
async function readEvents(store, total) {
  const { pageSize } = WORKLOAD.read;
  let after = null;
  let read = 0;
  let heldBackMs = 0;
  let waitingSince = null;
  while (read < total) {
    const page = await store.readPage(after, Math.min(pageSize, total - read));
    if (page.count === 0) {
      waitingSince ??= performance.now();
      if (performance.now() - waitingSince > HELD_BACK_TIMEOUT_MS) {
        throw new Error(`the log ended after ${read} events, ${total} expected (nothing more for ${HELD_BACK_TIMEOUT_MS / 1000} s)`);
      }
      await sleep(2);
      continue;
    }
    if (waitingSince !== null) heldBackMs += performance.now() - waitingSince;
    waitingSince = null;
    read += page.count;
    after = page.after;
  }
  return heldBackMs;
}

async function readAll(store) {
  await readEvents(store, WORKLOAD.read.warmupEvents);
  await store.settle?.();
  let heldBackMs = 0;
  const seconds = await secondsOf(async () => {
    heldBackMs = await readEvents(store, WORKLOAD.read.events);
  });
  return { rate: WORKLOAD.read.events / seconds, heldBackMs };
}

/** Each client owns its streams; a warm-up creates them, then appends pick one at random. */
async function singleAppend(store, clients, prefix) {
  const { durationMs, streamsPerClient } = WORKLOAD.single;
  const versions = Array.from({ length: clients }, () => new Array(streamsPerClient).fill(0));
  let n = 0;
  const appendTo = async (client, s) => {
    await store.append(`${prefix}-${client}-${s}`, versions[client][s], [orderEvent((n += 1))]);
    versions[client][s] += 1;
  };
  await Promise.all(
    versions.map(async (_, client) => {
      for (let s = 0; s < streamsPerClient; s += 1) await appendTo(client, s);
    }),
  );
  return opsPerSecond({ clients, durationMs, op: (client) => appendTo(client, Math.floor(Math.random() * streamsPerClient)) });
}

/**
 * A contender adapts its store to this shape:
 * - `append(streamId, version, events)`: `version` is the stream's current version, 0 for a new
 *   stream, used as the expected version;
 * - `readPage(after, limit)` returns `{ count, after }`, `after` being null at the start;
 * - `analyze()` refreshes planner statistics of its tables, `close()` ends its connections;
 * - optionally `settle()`, which resolves once no running transaction holds its reads back.
 *
 * Runs every event-store scenario on one such store, closes it, and returns `{ rowKey: value }`.
 */
export async function runEventStoreWorkload(store) {
  try {
    const batch = await batchAppend(store);
    await store.analyze();
    const read = await readAll(store);
    const single1 = await singleAppend(store, 1, 'one');
    const single8 = await singleAppend(store, 8, 'eight');
    // readHeldBackMs is no row: bench/run.js prints it with each run, to tell a slow read from a held-back one.
    return { singleAppend1: single1, singleAppend8: single8, batchAppend: batch, readAll: read.rate, readHeldBackMs: read.heldBackMs };
  } finally {
    await store.close();
  }
}
