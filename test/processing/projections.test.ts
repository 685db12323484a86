import { describe, expect, it } from 'vitest';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { projections } from '../../packages/rastro/src/processing/projections.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';

describe.each(backends())('reading processor state on $name', (backend) => {
  it('gets a row by key and lists rows in key order, a page at a time', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    for (const key of ['c', 'a', 'e', 'b', 'd']) await store.append(`s-${key}`, [{ type: 'x', data: { key } }]);
    const writer = defineProcessor({
      name: 'writer',
      handlers: { x: async (event, ctx) => void (await ctx.upsert('letters', event.data.key as string, { key: event.data.key }, { version: event.streamVersion })) },
    });
    await runReplay(writer, { store, runId: 'w', policy: {} });
    await store.append('s-other', [{ type: 'x', data: { key: 'z' } }]);
    const rows = projections(store);
    expect(await rows.get('letters', 'c')).toMatchObject({ key: 'c', doc: { key: 'c' }, version: 1, observedAt: null, eventId: expect.any(String) });
    expect(await rows.get('letters', 'z')).toBeUndefined();
    expect(await rows.get('other', 'c')).toBeUndefined();
    const first = await rows.list('letters', { limit: 2 });
    expect(first.map((row) => row.key)).toEqual(['a', 'b']);
    expect((await rows.list('letters', { after: first.at(-1)!.key, limit: 2 })).map((row) => row.key)).toEqual(['c', 'd']);
    expect((await rows.list('letters', { after: 'd' })).map((row) => row.key)).toEqual(['e']);
    await expect(rows.list('letters', { limit: 0 })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'limit' });
    await expect(rows.get('', 'c')).rejects.toMatchObject({ field: 'projection' });
  });
});
