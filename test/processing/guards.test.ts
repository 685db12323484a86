import { describe, expect, it } from 'vitest';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';

/** A processor that writes each snapshot event with the recency guard, recording what ctx.upsert answered. */
function snapshotProcessor(answers: boolean[]) {
  return defineProcessor({
    name: 'snapshots',
    handlers: {
      'charge.snapshot': async (event, ctx) => {
        const { chargeId, status, observedAt } = event.data as { chargeId: string; status: string; observedAt: string | null };
        answers.push(await ctx.upsert('charge', chargeId, { status }, { observedAt: observedAt === null ? null : new Date(observedAt) }));
      },
    },
  });
}

describe.each(backends())('the recency guard on $name', (backend) => {
  it('ignores an older observation, applies a later one and a tie within the same second', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const snapshot = (status: string, observedAt: string) => ({ type: 'charge.snapshot', data: { chargeId: 'ch_1', status, observedAt } });
    await store.append('charge-ch_1', [
      snapshot('paid', '2026-10-14T10:00:05.100Z'),
      snapshot('cancelled', '2026-10-14T10:00:01.000Z'), // stale: observed earlier
      snapshot('refunded', '2026-10-14T10:00:05.900Z'), // same second as 'paid': ties apply
    ]);
    const answers: boolean[] = [];
    const summary = await runReplay(snapshotProcessor(answers), { store, runId: 'r', policy: {} });
    expect(answers).toEqual([true, false, true]);
    const { rows } = await db.query<{ doc: { status: string } }>(`select doc from "${schema}".projections where key = 'ch_1'`);
    expect(rows[0]!.doc.status).toBe('refunded');
    // Each write counts as the handler was told: two applied (the batch stores only the last), one was refused.
    expect(summary.counters).toMatchObject({ written: 2, 'ignored-newer-version': 1 });

    // A stale snapshot in a later batch is refused by the SQL guard as well.
    await store.append('charge-ch_1', [snapshot('cancelled', '2026-10-14T09:00:00.000Z')]);
    await runReplay(snapshotProcessor(answers), { store, runId: 'r2', policy: {}, fromPosition: (await store.readAll()).at(-1)!.position });
    expect(answers.at(-1)).toBe(false);
    expect((await db.query<{ doc: { status: string } }>(`select doc from "${schema}".projections where key = 'ch_1'`)).rows[0]!.doc.status).toBe('refunded');
  });

  it('answers applied for an earlier millisecond of the same second: the comparison is by whole seconds', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const snapshot = (status: string, observedAt: string) => ({ type: 'charge.snapshot', data: { chargeId: 'ch_1', status, observedAt } });
    await store.append('charge-ch_1', [snapshot('paid', '2026-09-08T11:54:24.512Z'), snapshot('paid-with-invoice', '2026-09-08T11:54:24.000Z')]);
    const answers: boolean[] = [];
    await runReplay(snapshotProcessor(answers), { store, runId: 'r', policy: {} });
    expect(answers).toEqual([true, true]);
  });

  it('applies a write without an observation and keeps the stored one, in one batch and across batches', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const snapshot = (status: string, observedAt: string | null) => ({ type: 'charge.snapshot', data: { chargeId: 'ch_1', status, observedAt } });
    const stored = async () =>
      (await db.query<{ doc: { status: string }; observed_at: Date | null }>(`select doc, observed_at from "${schema}".projections where key = 'ch_1'`)).rows[0]!;
    await store.append('charge-ch_1', [snapshot('requested', null), snapshot('paid', '2026-10-14T10:00:05.700Z'), snapshot('paid-with-invoice', null)]);
    const answers: boolean[] = [];
    await runReplay(snapshotProcessor(answers), { store, runId: 'r1', policy: {} });
    // Null on either side applies; the null write did not clear the reference.
    expect(answers).toEqual([true, true, true]);
    expect(await stored()).toMatchObject({ doc: { status: 'paid-with-invoice' }, observed_at: new Date('2026-10-14T10:00:05.700Z') });

    // In later batches: a null write applies and keeps the reference, so an older one is still refused.
    const from = (await store.readAll()).at(-1)!.position + 1;
    await store.append('charge-ch_1', [snapshot('touched', null)]);
    await runReplay(snapshotProcessor(answers), { store, runId: 'r2', policy: {}, fromPosition: from });
    await store.append('charge-ch_1', [snapshot('cancelled', '2026-10-14T10:00:04.999Z')]);
    await runReplay(snapshotProcessor(answers), { store, runId: 'r3', policy: {}, fromPosition: from + 1 });
    expect(answers.slice(3)).toEqual([true, false]);
    expect(await stored()).toMatchObject({ doc: { status: 'touched' }, observed_at: new Date('2026-10-14T10:00:05.700Z') });
  });

  it('keeps a write without an observation when a stale write to the same row follows it in the batch', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const snapshot = (status: string, observedAt: string | null) => ({ type: 'charge.snapshot', data: { chargeId: 'ch_1', status, observedAt } });
    await store.append('charge-ch_1', [snapshot('paid', '2026-10-14T10:00:05.000Z')]);
    const answers: boolean[] = [];
    await runReplay(snapshotProcessor(answers), { store, runId: 'r1', policy: {} });
    const from = (await store.readAll()).at(-1)!.position + 1;
    await store.append('charge-ch_1', [snapshot('paid-and-imported', null), snapshot('cancelled', '2026-10-14T10:00:01.000Z')]);
    await runReplay(snapshotProcessor(answers), { store, runId: 'r2', policy: {}, fromPosition: from });
    expect(answers).toEqual([true, true, false]);
    const { rows } = await db.query<{ doc: { status: string } }>(`select doc from "${schema}".projections where key = 'ch_1'`);
    expect(rows[0]!.doc.status).toBe('paid-and-imported');
  });

  it('keeps the reference in SQL when the probe did not see the stored row', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await store.append('charge-ch_1', [{ type: 'charge.snapshot', data: { chargeId: 'ch_1', status: 'later', observedAt: null } }]);
    // A concurrent writer stored an observation after this run probed: the upsert itself must keep it.
    const racing = defineProcessor({
      name: 'racing',
      handlers: {
        'charge.snapshot': async (_event, ctx) => {
          await ctx.upsert('charge', 'ch_1', { status: 'later' }, { observedAt: null });
          await db.query(`insert into "${schema}".projections (projection, key, doc, observed_at) values ('charge', 'ch_1', '{"status":"first"}', '2026-10-14T10:00:05.7Z')`);
        },
      },
    });
    await runReplay(racing, { store, runId: 'race', policy: {} });
    const { rows } = await db.query<{ doc: { status: string }; observed_at: Date }>(`select doc, observed_at from "${schema}".projections where key = 'ch_1'`);
    expect(rows[0]).toMatchObject({ doc: { status: 'later' }, observed_at: new Date('2026-10-14T10:00:05.700Z') });
  });

  it('finds each stored row of a batch by projection and key, whatever characters the key holds', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const keys = ['plain', 'quote"d', 'back\\slash', 'new\nline', 'ünïcödé', 'emoji 🎉', '[1,"x"]'];
    // Two projections share every key: a row found under the wrong projection would answer for the other.
    const rows = keys.flatMap((key, i) => [
      `('a', '${key.replace(/'/g, "''")}', '{"v":${i}}', 5)`,
      ...(i % 2 === 0 ? [`('b', '${key.replace(/'/g, "''")}', '{"v":${i}}', 1)`] : []),
    ]);
    await db.query(`insert into "${schema}".projections (projection, key, doc, version) values ${rows.join(', ')}`);
    await store.append('s', keys.map((key) => ({ type: 'x', data: { key } })));
    const answers: string[] = [];
    const processor = defineProcessor({
      name: 'probed',
      handlers: {
        x: async (event, ctx) => {
          const { key } = event.data as { key: string };
          const [a, b] = await Promise.all([ctx.upsert('a', key, { v: 'new' }, { version: 3 }), ctx.upsert('b', key, { v: 'new' }, { version: 3 })]);
          answers.push(`${key}:${a}:${b}`);
        },
      },
    });
    const summary = await runReplay(processor, { store, runId: 'probe', policy: {} });
    // Projection a holds version 5 for every key: stale. Projection b holds version 1 (or nothing): applies.
    expect(answers).toEqual(keys.map((key) => `${key}:false:true`));
    expect(summary.counters).toMatchObject({ written: keys.length, 'ignored-newer-version': keys.length });
  });

  it('counts every write the same whatever batch it falls in', async () => {
    const counted = async (batchSize: number) => {
      const { db, schema } = await freshSchema(backend);
      const store = createEventStore(db, { schema });
      // Stream by stream, so one batch of 12 holds four writes to each row; row c is stored newer than all of them.
      for (const stream of ['a', 'b', 'c']) await store.append(stream, [1, 2, 3, 4].map((n) => ({ type: 'x', data: { n } })));
      await db.query(`insert into "${schema}".projections (projection, key, doc, version) values ('tally', 'c', '{}', 100)`);
      const processor = defineProcessor({
        name: 'tally',
        handlers: { x: async (event, ctx) => void (await ctx.upsert('tally', event.streamId, { n: event.data.n }, { version: event.streamVersion })) },
      });
      return (await runReplay(processor, { store, runId: 'r', policy: {}, batchSize })).counters;
    };
    const expected = { events: 12, written: 8, 'ignored-newer-version': 4 };
    expect(await counted(1)).toMatchObject(expected);
    expect(await counted(12)).toMatchObject(expected);
  });

  it('rejects an invalid guard as a handler error and parks the event', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await store.append('s', [{ type: 'x', data: {} }]);
    const processor = defineProcessor({
      name: 'bad-guard',
      handlers: { x: async (_event, ctx) => void (await ctx.upsert('p', 'k', {}, { version: -1 })) },
    });
    const summary = await runReplay(processor, { store, runId: 'bad', policy: {} });
    expect(summary.counters).toMatchObject({ parked: 1 });
  });
});
