import { describe, expect, it } from 'vitest';
import { LOG_START, type RecordedEvent } from '../../packages/rastro/src/store/event.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { freshSchema, postgresBackend } from '../support/databases.js';

// vitest.config.ts runs this file on its own, after the others: its transactions, held open for
// seconds, hold back every reader in the cluster, which would slow other suites.
const postgres = postgresBackend();
const WRITERS = 8;
const EVENTS_PER_WRITER = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A small deterministic generator, so a failing run can be repeated with its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One writer: transactions of 1–3 appends (to its own streams and to streams every writer
 * shares), mostly short, about one in a hundred held open for 1–3 s, some rolled back.
 */
async function write(store: EventStore, writer: number, rand: () => number): Promise<number> {
  let committed = 0;
  let attempted = 0;
  while (attempted < EVENTS_PER_WRITER) {
    const appends = 1 + Math.floor(rand() * 3);
    const hold = rand() < 0.01 ? 1000 + rand() * 2000 : rand() * 5;
    const rollback = rand() < 0.05;
    // Streams in name order within a transaction, so shared streams never deadlock.
    const plan = Array.from({ length: appends }, () => ({
      stream: rand() < 0.2 ? `shared-${Math.floor(rand() * 4)}` : `w${writer}-${Math.floor(rand() * 50)}`,
      size: 1 + Math.floor(rand() * 10),
    })).sort((a, b) => a.stream.localeCompare(b.stream));
    let inTx = 0;
    await store.db
      .transaction(async (tx) => {
        for (const { stream, size: wanted } of plan) {
          const size = Math.min(wanted, EVENTS_PER_WRITER - attempted - inTx);
          if (size === 0) break;
          const events = Array.from({ length: size }, (_, i) => ({ type: 'gap.test', data: { writer, i: attempted + inTx + i } }));
          await store.append(stream, events, { tx });
          inTx += size;
        }
        await sleep(hold);
        if (rollback) throw new Error('rolled back on purpose');
      })
      .then(
        () => (committed += inTx),
        (err: Error) => {
          if (err.message !== 'rolled back on purpose') throw err;
        },
      );
    attempted += inTx;
  }
  return committed;
}

describe.skipIf(!postgres)('the tailing reader on real PostgreSQL', () => {
  it('sees every committed event exactly once, each stream in version order, while 8 writers commit out of order', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    const seenIds = new Set<string>();
    const lastVersion = new Map<string, number>();
    const problems: string[] = [];
    const handle = (event: RecordedEvent) => {
      if (seenIds.has(event.id)) problems.push(`duplicate ${event.id}`);
      seenIds.add(event.id);
      const last = lastVersion.get(event.streamId) ?? 0;
      if (event.streamVersion <= last) problems.push(`${event.streamId} v${event.streamVersion} after v${last}`);
      lastVersion.set(event.streamId, event.streamVersion);
    };
    const subscription = store.subscribe(LOG_START, handle, { pollIntervalMs: 100, batchSize: 1000 });

    const seed = Date.now();
    const committed = await Promise.all(Array.from({ length: WRITERS }, (_, w) => write(store, w, random(seed + w))));
    const total = committed.reduce((sum, n) => sum + n, 0);
    for (let waited = 0; seenIds.size < total && waited < 30_000; waited += 50) await sleep(50);
    await subscription.stop();

    const { rows } = await db.query<{ id: string }>(`select id from "${schema}".events`);
    expect(rows).toHaveLength(total);
    const missing = rows.filter((row) => !seenIds.has(row.id));
    expect({ seed, missing: missing.length, problems: problems.slice(0, 5) }).toEqual({ seed, missing: 0, problems: [] });
    expect(seenIds.size).toBe(total);
    // Versions seen in order and without holes up to each stream's end.
    const { rows: streams } = await db.query<{ stream_id: string; version: number }>(`select stream_id, version from "${schema}".streams`);
    for (const stream of streams) expect(lastVersion.get(stream.stream_id)).toBe(stream.version);
  }, 300_000);
});
