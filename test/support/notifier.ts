import { afterAll, beforeAll } from 'vitest';
import { startSellerNotifier, type SellerNotifier } from '../../packages/server/src/demo/seller-notifier.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { freshSchema, type Backend } from './databases.js';

/**
 * A seller-notification fake for the test file (a real HTTP server), and a fresh store per test
 * that resets what the fake recorded.
 */
export function notifierForFile(): { notifier: () => SellerNotifier; storeOn: (backend: Backend) => Promise<EventStore> } {
  let notifier: SellerNotifier;
  beforeAll(async () => {
    notifier = await startSellerNotifier({ deduplicates: false });
  });
  afterAll(() => notifier.close());
  return {
    notifier: () => notifier,
    async storeOn(backend) {
      const { db, schema } = await freshSchema(backend);
      notifier.sent.length = 0;
      notifier.behaviour.failNext = undefined;
      return createEventStore(db, { schema });
    },
  };
}
