import { describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import type { Database } from '../../packages/rastro/src/db/database.js';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { runRelay } from '../../packages/rastro/src/outbox/relay.js';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay, type ReplayOptions } from '../../packages/rastro/src/processing/replay-runner.js';
import { processingSql } from '../../packages/rastro/src/processing/sql.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';

const EVENTS = 30;
const BATCH = 5;

/**
 * The same database, counting the run reads (`readBatch`) started through it: the replay's store
 * uses it, the live runner beside it does not.
 */
function countingReads(db: Database, schema: string): { db: Database; started(): number } {
  const readBatch = processingSql(quoteSchema(schema)).readBatch;
  let started = 0;
  const counting = new Proxy(db, {
    get(target, property) {
      if (property === 'query') {
        return (text: string, values?: unknown[]) => {
          if (text === readBatch) started += 1;
          return target.query(text, values);
        };
      }
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { db: counting, started: () => started };
}

/**
 * Replays the stream's EVENTS events, BATCH a batch, and returns, for each handler call in order,
 * how many reads had started by then. Reading one batch at a time, the k-th batch's handlers
 * run after exactly k reads; reading ahead, the next read starts before them.
 */
async function readsSeenByHandlers(store: EventStore, started: () => number, options: Partial<ReplayOptions> = {}): Promise<number[]> {
  const seen: number[] = [];
  const processor = defineProcessor({
    name: 'counter',
    handlers: {
      'tick.counted': async (event, ctx) => {
        seen.push(started());
        await ctx.upsert('ticks', event.streamId, { n: event.data.n }, { version: event.streamVersion });
      },
    },
  });
  const summary = await runReplay(processor, { store, policy: {}, batchSize: BATCH, ...options });
  expect(summary.counters.events).toBe(EVENTS);
  return seen;
}

const oneReadPerBatch = Array.from({ length: EVENTS }, (_, i) => Math.floor(i / BATCH) + 1);

describe.each(backends())('a replay beside live traffic on $name', (backend) => {
  async function setup() {
    const { db, schema } = await freshSchema(backend);
    const live = createEventStore(db, { schema });
    await live.append('ticks', Array.from({ length: EVENTS }, (_, n) => ({ type: 'tick.counted', data: { n } })));
    const reads = countingReads(db, schema);
    return { live, replayed: createEventStore(reads.db, { schema }), started: reads.started };
  }
  const idle = defineProcessor({ name: 'beside', handlers: { 'other.thing': async () => undefined } });

  const besides: [string, (store: EventStore) => Promise<{ stop(): Promise<void> }>][] = [
    ['a live runner', (store) => runLive(idle, { store, policy: {} })],
    ['a relay', (store) => runRelay({ store, publisher: createMemoryPublisher(), partitions: 2 })],
  ];

  it.each(besides)('reads no batch ahead while %s of the schema runs', async (_, start) => {
    const { live, replayed, started } = await setup();
    const runner = await start(live);
    try {
      expect(await readsSeenByHandlers(replayed, started)).toEqual(oneReadPerBatch);
    } finally {
      await runner.stop();
    }
  });

  it('reads ahead beside a live runner when told not to yield, and with no live runner', async () => {
    const { live, replayed, started } = await setup();
    const runner = await runLive(idle, { store: live, policy: {} });
    let told: number[];
    try {
      told = await readsSeenByHandlers(replayed, started, { yieldToLive: false });
    } finally {
      await runner.stop();
    }
    // The first batch's handlers run with the next two reads already started.
    expect(told[0]).toBeGreaterThan(1);
    const before = started();
    const alone = await readsSeenByHandlers(replayed, () => started() - before);
    expect(alone[0]).toBeGreaterThan(1);
  });

  it('refuses a yieldToLive that is not a boolean', async () => {
    const { replayed, started } = await setup();
    await expect(readsSeenByHandlers(replayed, started, { yieldToLive: 'no' as unknown as boolean })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'yieldToLive' });
    expect(started()).toBe(0);
  });
});
