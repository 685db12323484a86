import { describe, expect, it } from 'vitest';
import { defineProcessor } from '../../src/processing/processor.js';
import { runReplay } from '../../src/processing/replay-runner.js';
import { createEventStore } from '../../src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';

/** A processor that writes each snapshot event with the recency guard, recording what ctx.upsert answered. */
function snapshotProcessor(answers: boolean[]) {
  return defineProcessor({
    name: 'snapshots',
    handlers: {
      'charge.snapshot': async (event, ctx) => {
        const { chargeId, status, observedAt } = event.data as { chargeId: string; status: string; observedAt: string };
        answers.push(await ctx.upsert('charge', chargeId, { status }, { observedAt: new Date(observedAt) }));
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
    expect(summary.counters).toMatchObject({ written: 1, 'ignored-newer-version': 2 });

    // A stale snapshot in a later batch is refused by the SQL guard as well.
    await store.append('charge-ch_1', [snapshot('cancelled', '2026-10-14T09:00:00.000Z')]);
    await runReplay(snapshotProcessor(answers), { store, runId: 'r2', policy: {}, fromPosition: (await store.readAll()).at(-1)!.position });
    expect(answers.at(-1)).toBe(false);
    expect((await db.query<{ doc: { status: string } }>(`select doc from "${schema}".projections where key = 'ch_1'`)).rows[0]!.doc.status).toBe('refunded');
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
