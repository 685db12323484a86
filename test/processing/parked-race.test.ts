import { describe, expect, it } from 'vitest';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { parkedEvents } from '../../packages/rastro/src/processing/parking.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

describe.each(backends())('a parked retry racing a live runner on $name', (backend) => {
  it('never leaves a new event parked behind a block the retry lifted', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    let broken = true;
    let holdSlow: Promise<void> | undefined;
    let slowReached!: () => void;
    const reached = new Promise<void>((resolve) => (slowReached = resolve));
    const handled: string[] = [];
    const processor = defineProcessor({
      name: 'racy',
      handlers: {
        'order.paid': async (event) => {
          if (event.streamId === 'order-s' && broken) throw new Error('not yet');
          // The first time, the other stream's handler keeps the batch open until the retry is done.
          if (event.streamId === 'order-t' && holdSlow) {
            const wait = holdSlow;
            holdSlow = undefined;
            slowReached();
            await wait;
          }
          handled.push(`${event.streamId}@${event.streamVersion}`);
        },
      },
    });
    const runner = await runLive(processor, { store, policy: {}, pollIntervalMs: 50, partitions: 1 });
    try {
      await store.append('order-s', [{ type: 'order.paid', data: {} }]);
      const parked = parkedEvents(store);
      const [first] = await eventually(async () => {
        const list = await parked.list();
        return list.length === 1 ? list : undefined;
      }, 'the first event parked');

      // The runner reads e2 of the blocked stream with a slow event of another stream.
      let releaseSlow!: () => void;
      holdSlow = new Promise<void>((resolve) => (releaseSlow = resolve));
      await db.transaction(async (tx) => {
        await store.append('order-t', [{ type: 'order.paid', data: {} }], { tx });
        await store.append('order-s', [{ type: 'order.paid', data: {} }], { tx });
      });
      await reached;
      // The retry handles the parked event and finds nothing else parked yet.
      broken = false;
      expect(await parked.retry(processor, first!.eventId)).toEqual({ handled: 1, stillParked: 0, alreadyDone: [] });
      releaseSlow();

      await eventually(() => handled.includes('order-s@2'), 'the new event of the retried stream handled, not left parked');
      expect(await parked.list()).toEqual([]);
      expect(handled.filter((h) => h.startsWith('order-s'))).toEqual(['order-s@1', 'order-s@2']);
    } finally {
      await runner.stop();
    }
  });
});
