import { describe, expect, it } from 'vitest';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { rangeRemaining, WHOLE_LOG } from '../../packages/rastro/src/processing/read-batch.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { processingSql } from '../../packages/rastro/src/processing/sql.js';
import { LOG_START } from '../../packages/rastro/src/store/event.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { freshSchema, postgresBackend } from '../support/databases.js';

const backend = postgresBackend();
const processor = defineProcessor({ name: 'seen', handlers: { 'order.paid': async () => undefined } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!backend)('when a replay may end', () => {
  it('not while an event of its range is left after its checkpoint, though the frontier moved after its read', async () => {
    const { db, schema } = await freshSchema(backend!);
    const store = createEventStore(db, { schema });
    const sql = processingSql(quoteSchema(schema));
    // A transaction elsewhere takes an id and stays open: the event appended after it is held back.
    const holder = await db.connect();
    try {
      await holder.query('begin');
      await holder.query('select pg_current_xact_id()');
      await store.append('order-1', [{ type: 'order.paid', data: { n: 1 } }]);
      // The replay's read sees nothing below the frontier.
      expect(await store.readAll({ limit: 10 })).toEqual([]);
      await holder.query('commit');
    } finally {
      await holder.release();
    }
    // The holder ended after the read: nothing is held back any more, yet the event was never
    // read. Ending here ("nothing read, nothing held back") would skip it.
    expect(await rangeRemaining(db, sql, processor, WHOLE_LOG, LOG_START)).toBe(true);
    const [event] = await store.readAll({ limit: 10 });
    expect(event).toMatchObject({ type: 'order.paid' });
    // Once it is behind the checkpoint, the replay may end.
    expect(await rangeRemaining(db, sql, processor, WHOLE_LOG, event!)).toBe(false);
  });

  it('not before it handled an event its reads found held back, until the transaction before it ended', async () => {
    const { db, schema } = await freshSchema(backend!);
    const store = createEventStore(db, { schema });
    await store.append('order-0', [{ type: 'order.paid', data: { n: 0 } }]);
    // A transaction takes an id and stays open: the event committed after it is held back.
    const holder = await db.connect();
    let replay: Promise<{ counters: Record<string, number> }> | undefined;
    try {
      await holder.query('begin');
      await holder.query('select pg_current_xact_id()');
      await store.append('order-1', [{ type: 'order.paid', data: { n: 1 } }]);
      replay = runReplay(processor, { store, policy: {}, partitions: 4 });
      // The replay handles order-0, then reads its partitions empty below the frontier, again and again.
      await sleep(500);
      await holder.query('commit');
    } finally {
      await holder.release();
    }
    expect((await replay!).counters).toMatchObject({ events: 2 });
  });
});
