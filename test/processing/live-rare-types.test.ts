import { describe, expect, it } from 'vitest';
import type { Database } from '../../packages/rastro/src/db/database.js';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';

async function until(condition: () => boolean, what: string, ms = 20_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `db`, recording the lower bound ($1, $2: tx_order, position) of every batch read a runner sends. */
function recordingReads(db: Database): { recording: Database; readsFrom: number[] } {
  const readsFrom: number[] = [];
  const recording: Database = {
    ...db,
    query: (text, values, options) => {
      if (text.includes('fr as materialized')) readsFrom.push(Number(values?.[0]));
      return db.query(text, values, options);
    },
  };
  return { recording, readsFrom };
}

describe.each(backends())('a live runner of rare event types on $name', (backend) => {
  it('starts each read where its last empty read ended, not at its checkpoint, and still handles every event once', async () => {
    const { db, schema } = await freshSchema(backend);
    const { recording, readsFrom } = recordingReads(db);
    const store = createEventStore(recording, { schema });
    for (let i = 0; i < 20; i++) await store.append(`account-${i}`, [{ type: 'AccountDeposited', data: { amount: 1 } }]);
    const handled: string[] = [];
    const processor = defineProcessor({ name: 'rare', handlers: { Rare: async (event) => void handled.push(String(event.data.n)) } });
    const runner = await runLive(processor, { store, policy: {}, pollIntervalMs: 20 });
    try {
      await until(() => readsFrom.length >= 3, 'three reads');
      // The first read starts at the checkpoint (the log's start) and finds nothing of its type;
      // the reads after it start past every event it went through.
      expect(readsFrom[0]).toBe(0);
      expect(Math.min(...readsFrom.slice(1))).toBeGreaterThan(0);

      await store.append('rare-1', [{ type: 'Rare', data: { n: 1 } }]);
      for (let i = 0; i < 5; i++) await store.append(`account-${i}`, [{ type: 'AccountDeposited', data: { amount: 1 } }]);
      await store.append('rare-2', [{ type: 'Rare', data: { n: 2 } }]);
      await until(() => handled.length === 2, 'both rare events');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(handled).toEqual(['1', '2']);
    } finally {
      await runner.stop();
    }
  });

  it('forgets where it read to when the database hands out lower transaction ids again, as a standby promoted behind its primary does', async () => {
    const { db, schema } = await freshSchema(backend);
    const { recording, readsFrom } = recordingReads(db);
    const store = createEventStore(recording, { schema });
    const handled: string[] = [];
    const processor = defineProcessor({ name: 'rare', handlers: { Rare: async (event) => void handled.push(String(event.data.n)) } });
    const runner = await runLive(processor, { store, policy: {}, pollIntervalMs: 20 });
    try {
      const first = await store.append('rare-1', [{ type: 'Rare', data: { n: 1 } }]);
      await until(() => handled.length === 1, 'the first rare event');
      const [{ tx_order: handledAt }] = (await db.query<{ tx_order: number }>(`select tx_order from ${schema}.events where position = $1`, [first.positions[0]])).rows as [{ tx_order: number }];
      // 300 transactions with ids, none of them appending: empty reads now start past them.
      for (let i = 0; i < 300; i++) await db.query('select pg_current_xact_id()');
      const readsBefore = readsFrom.length;
      await until(() => readsFrom.slice(readsBefore).some((from) => from > Number(handledAt) + 250), 'a read starting past the burnt ids');
      // What a promoted standby does to the ids the lost tail had used: new transactions get them
      // again. Here the ids move back by 200, above the runner's checkpoint and below where its
      // empty reads reached.
      await db.query(`update ${schema}.store_settings set tx_order_offset = tx_order_offset - 200`);
      const second = await store.append('rare-2', [{ type: 'Rare', data: { n: 2 } }]);
      const [{ tx_order: reused }] = (await db.query<{ tx_order: number }>(`select tx_order from ${schema}.events where position = $1`, [second.positions[0]])).rows as [{ tx_order: number }];
      expect(Number(reused)).toBeGreaterThan(Number(handledAt));
      expect(Number(reused)).toBeLessThan(Math.max(...readsFrom));
      await until(() => handled.length === 2, 'the rare event written with a reused id', 5_000);
      expect(handled).toEqual(['1', '2']);
    } finally {
      await runner.stop();
    }
  });

  it('wakes for appends of its types, not for others', async () => {
    const { db, schema } = await freshSchema(backend);
    let reads = 0;
    const recording: Database = {
      ...db,
      query: (text, values, options) => {
        if (text.includes('fr as materialized')) reads += 1;
        return db.query(text, values, options);
      },
    };
    const store = createEventStore(recording, { schema });
    const handled: number[] = [];
    const processor = defineProcessor({ name: 'rare', handlers: { Rare: async (event) => void handled.push(Number(event.data.n)) } });
    // A poll far away: only notifications make it read.
    const runner = await runLive(processor, { store, policy: {}, pollIntervalMs: 60_000 });
    try {
      await until(() => reads >= 1, 'the first read');
      await new Promise((resolve) => setTimeout(resolve, 100));
      const before = reads;
      for (let i = 0; i < 10; i++) {
        await store.append(`account-${i}`, [{ type: 'AccountDeposited', data: { amount: 1 } }]);
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(reads).toBe(before);
      await store.append('rare-1', [{ type: 'Rare', data: { n: 1 } }]);
      await until(() => handled.length === 1, 'the rare event, long before the poll');
    } finally {
      await runner.stop();
    }
  });
});
