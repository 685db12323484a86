// The trail: a log of TRAIL.events events (rastro appends, links computed in their statements),
// then sealing it, a full verification against a raw scan of the same table, and an incremental
// verification after TRAIL.newEvents more; and 8 clients' single-event appends for the rate the
// sealer must keep up with.
import { randomUUID } from 'node:crypto';
import { createEventStore, migrate, openDatabase, startSealer, verifyTrail } from 'rastro';
import { runContender } from '../shared/contender.js';
import { DATABASE_URL } from '../shared/database.js';
import { opsPerSecond } from '../shared/measure.js';
import { poolErrors } from '../shared/pools.js';

export const TRAIL = {
  events: Number(process.env.BENCH_TRAIL_EVENTS ?? 1_000_000),
  perStream: 50,
  newEvents: 10_000,
  appendMs: Number(process.env.BENCH_DURATION_MS ?? 5000),
};

const data = (i) => ({ orderId: `o-${i}`, amountCents: 1000 + (i % 997), currency: 'BRL', note: 'a bench event of about a hundred and fifty bytes of JSON' });

/** Appends `count` events, TRAIL.perStream per stream in one append, on `clients` connections. */
async function fill(store, prefix, count, clients = 8) {
  let next = 0;
  const streams = Math.ceil(count / TRAIL.perStream);
  await Promise.all(Array.from({ length: clients }, async () => {
    for (let s = next++; s < streams; s = next++) {
      const n = Math.min(TRAIL.perStream, count - s * TRAIL.perStream);
      await store.append(`${prefix}-${s}`, Array.from({ length: n }, (_, i) => ({ type: 'order.paid', data: data(s * TRAIL.perStream + i) })), { expectedVersion: 'no-stream' });
    }
  }));
}

/** A raw scan of the events table: every column of every row, keyset pages of 10,000, as the audit's baseline reads. */
async function rawScan(db, s) {
  let after = null;
  let rows = 0;
  for (;;) {
    const page = (await db.query(`select * from ${s}.events ${after ? 'where (tx_order, position) > ($1, $2)' : ''} order by tx_order, position limit 10000`, after ?? [])).rows;
    rows += page.length;
    if (page.length < 10_000) return rows;
    after = [page.at(-1).tx_order, page.at(-1).position];
  }
}

await runContender(async (run) => {
  const schema = `bench_trail_${run}`;
  const errors = poolErrors(`trail pool for ${schema}`);
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 10, onError: errors.onError });
  try {
    await db.query(`drop schema if exists ${schema} cascade`);
    await migrate(db, { schema });
    const store = createEventStore(db, { schema });
    const s = `"${schema}"`;

    // 8 clients, one event per append, each to a stream of its own: the rate to keep up with.
    const versions = new Map();
    const append8 = await opsPerSecond({
      clients: 8, durationMs: TRAIL.appendMs,
      op: async (client) => {
        const stream = `live-${client}`;
        const version = versions.get(stream) ?? 0;
        await store.append(stream, [{ id: randomUUID(), type: 'order.paid', data: data(version) }], { expectedVersion: version });
        versions.set(stream, version + 1);
      },
    });
    await fill(store, 'order', TRAIL.events);
    const total = Number((await db.query(`select count(*) as n from ${s}.events`)).rows[0].n);

    // Sealing what is there, as fast as the sealer goes.
    let started = performance.now();
    const sealer = await startSealer({ store, intervalMs: 10 });
    for (;;) {
      const { rows } = await db.query(`select coalesce(sum(events), 0)::bigint as n from ${s}.trail_blocks`);
      if (Number(rows[0].n) >= total) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const sealSeconds = (performance.now() - started) / 1000;
    await sealer.stop();
    await db.query(`analyze ${s}.events; analyze ${s}.event_hashes; analyze ${s}.trail_blocks; analyze ${s}.streams`);

    await rawScan(db, s);
    started = performance.now();
    const scanned = await rawScan(db, s);
    const rawScanRate = scanned / ((performance.now() - started) / 1000);

    started = performance.now();
    const full = await verifyTrail(store, { full: true });
    const fullMs = performance.now() - started;
    if (full.findings.length > 0) throw new Error(`the full verification found ${full.findings.length} things: ${full.findings[0].detail}`);

    await fill(store, 'later', TRAIL.newEvents);
    const tail = await startSealer({ store, intervalMs: 10 });
    for (let sealed = 0; sealed < total + TRAIL.newEvents; await new Promise((resolve) => setTimeout(resolve, 20))) {
      sealed = Number((await db.query(`select coalesce(sum(events), 0)::bigint as n from ${s}.trail_blocks`)).rows[0].n);
    }
    await tail.stop();
    started = performance.now();
    const incremental = await verifyTrail(store, { since: full.checkpoint });
    const incrementalMs = performance.now() - started;
    if (incremental.full || incremental.findings.length > 0) throw new Error('the incremental verification was not incremental, or found something');

    return {
      append8, sealRate: total / sealSeconds, rawScanRate, verifyRate: total / (fullMs / 1000),
      fullMs, incrementalMs, events: total,
    };
  } finally {
    await db.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
    errors.closing();
    await db.close();
  }
});
