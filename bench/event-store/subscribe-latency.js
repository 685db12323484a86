import { openDatabase, migrate, createEventStore, LOG_START } from 'rastro';
// Append-to-handler latency of a subscriber on real PostgreSQL: one writer appends 300 events,
// 5-25 ms apart, from another pool; a subscriber measures when each reaches its handler.
// Run on a quiet server: an open transaction anywhere in the cluster holds readers back.
const db = await openDatabase({ url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });
const schema = 'lat_' + Date.now();
await migrate(db, { schema });
const store = createEventStore(db, { schema });
const writerDb = await openDatabase({ url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });
const writer = createEventStore(writerDb, { schema });
const lat = [];
let pending;
const sub = store.subscribe(LOG_START, (e) => { if (pending && e.data.i === pending.i) { lat.push(performance.now() - pending.t); pending.done(); } }, { pollIntervalMs: 1000 });
await new Promise((r) => setTimeout(r, 300));
for (let i = 0; i < 300; i++) {
  await new Promise(async (done) => { pending = { i, t: performance.now(), done }; await writer.append('s' + (i % 10), [{ type: 't', data: { i } }]); });
  await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
}
await sub.stop();
lat.sort((a, b) => a - b);
const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))].toFixed(1);
console.log(`appends ${lat.length}: append-to-handler latency p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${lat.at(-1).toFixed(1)} ms`);
await db.query(`drop schema ${schema} cascade`);
await db.close(); await writerDb.close();
