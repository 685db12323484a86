import { describe, expect, it } from 'vitest';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { processingSql } from '../../packages/rastro/src/processing/sql.js';
import { followsOn } from '../../packages/rastro/src/processing/runners/replay-partitions.js';
import { readRunBatch, WHOLE_LOG, type RunEvents } from '../../packages/rastro/src/processing/read-batch.js';
import type { RunContext } from '../../packages/rastro/src/processing/run-context.js';
import { LOG_START } from '../../packages/rastro/src/store/event.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
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

  it('reading some partitions, brings the rows their events wrote last and none of the rows of the others', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    for (let i = 0; i < 12; i++) await store.append(`s-${i}`, [{ type: 'row.set', data: { key: `k${i}`, doc: 'a' } }]);
    await runReplay(writer, { store, runId: 'first', policy: {} });
    const run: RunContext = {
      db, sql: processingSql(`"${schema}"`), schema, processor: writer, runId: 'again', mode: 'replay', simulate: false,
      policy: {}, ownerToken: 0, leaseMs: 60_000, effectConcurrency: 1,
    };
    const whole = await readRunBatch(run, WHOLE_LOG, LOG_START, 100, { preload: ['p'] });
    expect(whole.stored).toHaveLength(12);
    // The range of a read of partition 0 holds partition 1's events too, and the rows they wrote:
    // another runner holds those, and may be writing them. They are left to the probe.
    const some = await readRunBatch(run, WHOLE_LOG, LOG_START, 100, { partitions: { count: 2, owned: [0] }, preload: ['p'] });
    const own = some.events.map((event) => String(event.data.key)).sort();
    expect(own.length).toBeGreaterThan(0);
    expect(own.length).toBeLessThan(12);
    expect(some.events.every((event) => event.partition === 0)).toBe(true);
    expect(some.stored!.map(([, key]) => key).sort()).toEqual(own);
  });

  it('reads timestamps exactly, to the millisecond and to the microsecond, before 1970 and after 2038 as well', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    // Around the bounds of the float path (1970, 2038), a millisecond before and after a second,
    // and far from both.
    const times = ['0099-07-01T00:00:00.001Z', '1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.001Z',
      '2026-10-14T12:00:00.999Z', '2026-10-14T12:00:01.000Z', '2037-12-31T23:59:59.999Z', '2038-01-01T00:00:00.000Z', '2106-02-07T06:28:16.001Z', '9999-12-31T23:59:59.999Z'];
    for (const [i, at] of times.entries()) await store.append(`t-${i}`, [{ type: 'row.set', data: { key: `k${i}`, doc: 'a' }, occurredAt: new Date(at) }]);
    // Microseconds no Date holds, written by SQL as a source's observation may be (within 2^53 of
    // them, as far as a JSON number is exact: to the year 2255).
    const micros = ['1969-12-31 23:59:59.999999+00', '2001-02-03 04:05:06.000001+00', '2037-12-31 23:59:59.999999+00', '2106-02-07 17:30:13.603905+00', '2200-01-01 00:00:00.000001+00'];
    // And an event written by SQL, its time with microseconds, before 1970: its millisecond is the one below.
    await db.transaction(async (tx) => {
      await tx.query(`insert into "${schema}".streams (stream_id, version, tx_order) values ('t-sql', 1, pg_current_xact_id()::text::bigint)`);
      await tx.query(
        `insert into "${schema}".events (tx_order, stream_id, stream_version, id, type, data, occurred_at)
         values (pg_current_xact_id()::text::bigint, 't-sql', 1, gen_random_uuid(), 'row.set', '{"key": "k-sql", "doc": "a"}', '1969-12-31 23:59:59.9995+00')`,
      );
    });
    await db.query(
      `insert into "${schema}".projections (projection, key, doc, observed_at, event_position)
       select 'p', 'k' || i, '{}', t, e.position from unnest($1::timestamptz[]) with ordinality as m(t, i)
         join "${schema}".events e on e.stream_id = 't-' || i`,
      [micros],
    );
    const run: RunContext = {
      db, sql: processingSql(`"${schema}"`), schema, processor: writer, runId: 'times', mode: 'replay', simulate: false,
      policy: {}, ownerToken: 0, leaseMs: 60_000, effectConcurrency: 1,
    };
    const read = await readRunBatch(run, WHOLE_LOG, LOG_START, 100, { preload: ['p'] });
    expect(read.events.map((event) => event.occurredAt.toISOString())).toEqual([...times, '1969-12-31T23:59:59.999Z'].map((at) => new Date(at).toISOString()));
    const { rows } = await db.query<{ key: string; us: string }>(
      `select key, (extract(epoch from observed_at) * 1000000)::bigint::text as us from "${schema}".projections order by key`,
    );
    expect(rows).toHaveLength(micros.length);
    const observed = new Map(read.stored!.map(([, key, , , us]) => [key, String(us)]));
    for (const row of rows) expect(observed.get(row.key)).toBe(row.us);
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
