import { describe, expect, it } from 'vitest';
import { buildApp } from '../../packages/server/src/http/app.js';
import { createServices } from '../../packages/server/src/server.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { parkedEvents } from '../../packages/rastro/src/processing/parking.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';

/** A processor whose `notify` effect fails while `provider.down` is set, and counts what it sent. */
function notesWorld() {
  const provider = { down: false, sent: [] as string[] };
  const processor = defineProcessor({
    name: 'notes',
    handlers: {
      'note.added': async (event, ctx) => {
        await ctx.upsert('note', event.streamId, { text: event.data.text }, { version: event.streamVersion });
        await ctx.effect('notify', async (key) => {
          if (provider.down) throw new Error('the notifier is down');
          provider.sent.push(key);
          return { sent: true };
        });
      },
    },
  });
  return { provider, processor };
}

const release = { notify: { mode: 'apply', onFailure: 'release' } } as const;

describe.each(backends())('reviewing parked events on $name', (backend) => {
  it('refuses a run id no run has, such as a bare live, naming runId and the live runs, rather than listing nothing', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const { provider, processor } = notesWorld();
    await store.append('note-1', [{ type: 'note.added', data: { text: 'hello' } }]);
    provider.down = true;
    await runLiveRound(processor, { store, policy: release });
    const parked = parkedEvents(store);
    const [entry] = await parked.list({ runId: 'live:notes' });
    expect(entry).toMatchObject({ runId: 'live:notes', processor: 'notes', reason: 'failed' });
    for (const runId of ['live', 'live:nope', 'replay-typo']) {
      await expect(parked.list({ runId })).rejects.toMatchObject({
        code: 'RASTRO_VALIDATION', field: 'runId',
        message: `runId: no run ${JSON.stringify(runId)}: a live run's id is live:<processor> (here: live:notes), a relay's relay:<name>, a replay's the id it was started with`,
      });
    }
    // An action naming such a run says the same, not only that the event is not parked there.
    await expect(parked.retry(processor, entry!.eventId, { runId: 'live' })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'runId' });
  });

  it("shows a live run's parked entry as settled once a replay did its effect, and a retry sends nothing again and says so", async () => {
    const { db, schema } = await freshSchema(backend);
    const services = createServices(db, { schema, snapshotEvery: 100, idempotencyTtlSeconds: 86_400 });
    const { store } = services;
    const { provider, processor } = notesWorld();
    const app = await buildApp({ ...services, processors: new Map([[processor.name, processor]]) });
    const parkedList = async () => (await app.inject({ url: '/ops/parked-events' })).json().parked;
    await store.append('note-1', [{ type: 'note.added', data: { text: 'hello' } }]);
    expect((await app.inject({ url: '/ops/parked-events?runId=live' })).json()).toMatchObject({ status: 400, code: 'RASTRO_VALIDATION', field: 'runId' });

    // The live run's call fails; released (the provider deduplicates), the event is parked.
    provider.down = true;
    await runLiveRound(processor, { store, policy: release });
    const [before] = await parkedList();
    expect(before).toMatchObject({ runId: 'live:notes', reason: 'failed', effects: [], settled: false });

    // A replay with an apply policy handles the event again: the effect is sent, once.
    provider.down = false;
    await runReplay(processor, { store, runId: 'fix-notes', policy: release });
    expect(provider.sent).toEqual([`${before.eventId}:notify`]);
    const settled = { effects: [{ effectType: 'notify', state: 'done', runId: 'fix-notes' }], settled: true };
    expect(await parkedList()).toEqual([expect.objectContaining({ runId: 'live:notes', eventId: before.eventId, ...settled })]);
    expect(await parkedEvents(store).list({ runId: 'live:notes' })).toEqual([expect.objectContaining(settled)]);

    // The retry unparks it, calls nothing, and says the effect was already done, and by which run.
    const retried = await app.inject({ method: 'POST', url: `/ops/parked-events/live:notes/${before.eventId}/retry`, payload: '{}', headers: { 'content-type': 'application/json' } });
    expect(retried.json()).toEqual({
      action: 'retry', runId: 'live:notes', handled: 1, stillParked: 0,
      alreadyDone: [{ eventId: before.eventId, effectType: 'notify', state: 'done', runId: 'fix-notes' }],
    });
    expect(provider.sent).toHaveLength(1);
    expect(await parkedList()).toEqual([]);
    await app.close();
  });

  it('does not show an entry as settled while one of its effects is not done', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const { provider, processor } = notesWorld();
    await store.append('note-1', [{ type: 'note.added', data: { text: 'hello' } }]);
    provider.down = true;
    await runLiveRound(processor, { store, policy: release });
    // A replay whose call fails under keep leaves the effect uncertain: nothing is settled.
    await runReplay(processor, { store, runId: 'fix-keep', policy: { notify: { mode: 'apply', onFailure: 'keep' } } });
    expect(await parkedEvents(store).list({ runId: 'live:notes' })).toEqual([
      expect.objectContaining({ effects: [{ effectType: 'notify', state: 'uncertain', runId: 'fix-keep' }], settled: false }),
    ]);
  });
});
