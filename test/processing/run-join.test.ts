import { describe, expect, it } from 'vitest';
import { RunInProgressError } from '../../packages/rastro/src/errors.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { makeOrders, payOrders } from '../support/orders.js';

/** A processor whose handlers wait for `open()`: a replay of it stays running until then. */
function gatedProcessor() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered = 0;
  const processor = defineProcessor({
    name: 'gated',
    handlers: {
      'order.paid': async (event, ctx) => {
        entered++;
        await gate;
        await ctx.upsert('gated', event.streamId, { ok: true }, { version: event.streamVersion });
      },
    },
  });
  return { processor, open, entered: () => entered };
}

async function progressOf(store: EventStore, runId: string) {
  const { rows } = await store.db.query(
    `select (select json_agg(c order by c.name) from "${store.schema}".run_counters c where c.run_id = $1) as counters,
            (select json_agg(p order by p.partition) from "${store.schema}".processor_checkpoints p where p.run_id = $1) as checkpoints`,
    [runId],
  );
  return rows[0];
}

describe.each(backends())('runners joining one run id on $name', (backend) => {
  it('refuses a runner joining a running run id with another policy, changing nothing; one with the same policy shares the run', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await payOrders(store, makeOrders(30));
    const { processor, open, entered } = gatedProcessor();
    const first = runReplay(processor, { store, runId: 'day', policy: {}, batchSize: 10 });
    await eventually(() => entered() > 0, 'the first replay to start handling');
    const before = await progressOf(store, 'day');

    const other = { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } as const;
    const refused = await runReplay(processor, { store, runId: 'day', policy: other }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(RunInProgressError);
    expect((refused as RunInProgressError).code).toBe('RASTRO_RUN_IN_PROGRESS');
    expect((refused as RunInProgressError).runId).toBe('day');
    expect(await progressOf(store, 'day')).toEqual(before);

    // The same policy joins the run: both end together, every event handled once.
    const joined = runReplay(processor, { store, runId: 'day', policy: {} });
    open();
    const [a, b] = await Promise.all([first, joined]);
    expect(a.counters).toMatchObject({ events: 30, written: 30 });
    expect(b).toEqual(a);
    // The run ended: the same run id may be started again, and finds nothing left to do.
    expect((await runReplay(processor, { store, runId: 'day', policy: other })).counters.events).toBe(30);
  });
});
