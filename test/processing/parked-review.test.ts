import { describe, expect, it } from 'vitest';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { parkedEvents } from '../../packages/rastro/src/processing/parking.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
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
});
