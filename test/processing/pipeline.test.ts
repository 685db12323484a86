import { describe, expect, it } from 'vitest';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { processEvents } from '../../packages/rastro/src/processing/process-events.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { readRunBatch, WHOLE_LOG } from '../../packages/rastro/src/processing/read-batch.js';
import type { RunContext } from '../../packages/rastro/src/processing/run-context.js';
import { processingSql } from '../../packages/rastro/src/processing/sql.js';
import { LOG_START } from '../../packages/rastro/src/store/event.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';

// Under a replay's pipeline, a batch that only moved its progress is saved while the next batch
// runs. The next batch's commit must still wait for it, so commits land in batch order.
describe.each(backends())('the replay pipeline on $name', (backend) => {
  it('holds a batch’s commit until the previous batch’s progress is saved', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await store.append('order-1', [{ type: 'order.paid', data: { orderId: '1' } }]);
    const processor = defineProcessor({
      name: 'pipelined',
      handlers: { 'order.paid': async (event, ctx) => void (await ctx.upsert('seen', event.streamId, { seen: true }, { version: event.streamVersion })) },
    });
    const sql = processingSql(quoteSchema(schema));
    const run: RunContext = { db, sql, schema, processor, runId: 'pipelined', mode: 'replay', simulate: false, policy: {}, ownerToken: 0, leaseMs: 60_000, effectConcurrency: 1 };
    const input = await readRunBatch(run, WHOLE_LOG, LOG_START, 10);

    let savePrevious!: () => void;
    const previous = new Promise<void>((resolve) => (savePrevious = resolve));
    const processing = processEvents(run, input, { partitions: [0], at: (last) => last }, { previous });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const rows = async () => (await db.query(`select key from ${quoteSchema(schema)}.projections`)).rows;
    expect(await rows()).toEqual([]);

    savePrevious();
    const outcome = await processing;
    expect(outcome.counters.get('written')).toBe(1);
    expect(await rows()).toEqual([{ key: 'order-1' }]);
  });
});
