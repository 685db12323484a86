import { describe, expect, it } from 'vitest';
import { defineProcessor } from '../../src/processing/processor.js';
import { runReplay } from '../../src/processing/replay-runner.js';
import { processingSql } from '../../src/processing/sql.js';
import { followsOn } from '../../src/processing/runners/replay-partitions.js';
import type { RunEvents } from '../../src/processing/read-batch.js';
import { createEventStore } from '../../src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';

/** Writes `data.doc` to `data.key` of projection `p`, unguarded: every write applies. */
const writer = defineProcessor({
  name: 'writer',
  handlers: {
    'row.set': async (event, ctx) => {
      const { key, doc } = event.data as { key: string; doc: string };
      await ctx.upsert('p', key, { doc }, { observedAt: null });
    },
  },
});

describe.each(backends())('a replay reading ahead on $name', (backend) => {
  it('probes a row the batch before wrote again, rather than trust a read made before that batch committed', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const set = (key: string, doc: string) => ({ type: 'row.set', data: { key, doc } });
    // Two warm-up events (the runner learns which projections to read with the events), then two
    // writes of row R, each event its own batch.
    const { positions } = await store.append('rows', [set('w0', 'a'), set('w1', 'b'), set('R', 'x'), set('R', 'y')]);
    // A first run over the last event only: R holds y, written by that event.
    await runReplay(writer, { store, runId: 'first', policy: {}, fromPosition: positions[3], toPosition: positions[3] });
    // Replayed from the start one event a batch, the last event's read (with R as y) is made
    // before the third event's batch writes x into R: its y must not count as stored.
    const summary = await runReplay(writer, { store, runId: 'again', policy: {}, batchSize: 1 });
    expect(summary.counters).toMatchObject({ events: 4, written: 4 });
    const { rows } = await db.query<{ doc: { doc: string } }>(`select doc from "${schema}".projections where projection = 'p' and key = 'R'`);
    expect(rows[0]!.doc.doc).toBe('y');
  });

  it('probes a row written two batches back again: the read ahead was made before both committed', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const set = (key: string, doc: string) => ({ type: 'row.set', data: { key, doc } });
    // As above, with a batch writing another row between the two writes of R: the last event's
    // read is the one read ahead while the third event's batch ran, two batches before its own.
    const { positions } = await store.append('rows', [set('w0', 'a'), set('w1', 'b'), set('R', 'x'), set('z', 'c'), set('R', 'y')]);
    await runReplay(writer, { store, runId: 'first', policy: {}, fromPosition: positions[4], toPosition: positions[4] });
    const summary = await runReplay(writer, { store, runId: 'again', policy: {}, batchSize: 1 });
    expect(summary.counters).toMatchObject({ events: 5, written: 5 });
    const { rows } = await db.query<{ doc: { doc: string } }>(`select doc from "${schema}".projections where projection = 'p' and key = 'R'`);
    expect(rows[0]!.doc.doc).toBe('y');
  });

  it('holds a stream parked two batches back, though the batch was read before the park', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const handled: string[] = [];
    const picky = defineProcessor({
      name: 'picky',
      handlers: {
        'order.paid': async (event) => {
          if (event.data.orderId === 'bad') throw new Error('cannot handle this order');
          handled.push(String(event.data.orderId));
        },
      },
    });
    const paid = (orderId: string) => [{ type: 'order.paid', data: { orderId } }];
    // One event a batch: the stream's second event is read ahead, with the first, before the
    // first is parked, and handled after the batch between them.
    await store.append('order-bad', paid('bad'));
    await store.append('order-a', paid('a'));
    await store.append('order-bad', paid('bad-later'));
    await store.append('order-b', paid('b'));
    const summary = await runReplay(picky, { store, runId: 'held', policy: {}, batchSize: 1 });
    expect(summary.counters).toMatchObject({ events: 4, parked: 2 });
    expect(handled).toEqual(['a', 'b']);
    const { rows } = await db.query<{ reason: string }>(`select reason from "${schema}".parked_events where run_id = 'held' order by position`);
    expect(rows.map((row) => row.reason)).toEqual(['failed', 'waiting']);
  });

  it('reads rows its events wrote last with them, and gives each handler the answer a probe would', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    // What each handler was told, by run and event position (streams run concurrently).
    const answers = new Map<string, [number, boolean][]>();
    const told = (runId: string) => (answers.get(runId) ?? []).sort((a, b) => a[0] - b[0]).map(([, applied]) => applied);
    const versioned = defineProcessor({
      name: 'versioned',
      handlers: {
        'row.set': async (event, ctx) => {
          const { key, doc } = event.data as { key: string; doc: string };
          const applied = await ctx.upsert('v', key, { doc }, { version: event.streamVersion });
          answers.set(ctx.runId, [...(answers.get(ctx.runId) ?? []), [event.position, applied]]);
        },
      },
    });
    const set = (key: string, doc: string) => ({ type: 'row.set', data: { key, doc } });
    for (let i = 0; i < 12; i++) await store.append(`s-${i}`, [set(`k${i}`, 'old'), set(`k${i}`, 'new')]);
    await runReplay(versioned, { store, runId: 'first', policy: {}, batchSize: 4 });
    expect(told('first')).toEqual(Array(24).fill(true));
    // Replayed, each stream's first write is older than the stored row, its second one is stored.
    const probe = processingSql(`"${schema}"`).probe;
    let probed = 0;
    const query = db.query.bind(db);
    db.query = ((text: string, ...rest: unknown[]) => {
      if (text === probe) probed += (JSON.parse((rest[0] as string[])[0]!) as unknown[]).length;
      return (query as (...args: unknown[]) => unknown)(text, ...rest);
    }) as typeof db.query;
    const again = await runReplay(versioned, { store, runId: 'again', policy: {}, batchSize: 4 });
    db.query = query;
    expect(told('again')).toEqual(Array(12).fill([false, true]).flat());
    expect(again.counters).toMatchObject({ events: 24, written: 12, 'ignored-newer-version': 12 });
    // The first three batches (two streams each) are read before the first one has run, so
    // before the runner knows the projection: each probes its two rows. The later ones bring the
    // rows their events wrote last, and probe none.
    expect(probed).toBe(6);
    const { rows } = await db.query<{ key: string; doc: { doc: string }; event_position: number }>(
      `select key, doc, event_position from "${schema}".projections where projection = 'v' order by event_position`,
    );
    const events = await store.readAll();
    expect(rows.map((row) => row.doc.doc)).toEqual(Array(12).fill('new'));
    // Each row names the position of the event whose write it holds.
    expect(rows.map((row) => Number(row.event_position))).toEqual(events.filter((event) => event.streamVersion === 2).map((event) => event.position));
  });
});

describe('a read ahead of the next one', () => {
  const read = (n: number, frontier: number) => ({ events: Array(n).fill({}), frontier }) as unknown as RunEvents;

  it('stands for it only when the read before was full and the frontier it read below is no lower', () => {
    expect(followsOn(read(10, 50), read(10, 50), 10)).toBe(true);
    expect(followsOn(read(10, 50), read(4, 60), 10)).toBe(true);
    // A short read: the events the read ahead skipped were not all the read's.
    expect(followsOn(read(9, 50), read(10, 50), 10)).toBe(false);
    // Read below a lower frontier: events committed between the two snapshots are missing from
    // what it skipped, so it would skip events the read before never had.
    expect(followsOn(read(10, 50), read(10, 49), 10)).toBe(false);
  });
});
