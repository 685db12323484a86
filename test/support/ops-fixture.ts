import type { FastifyInstance } from 'fastify';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { buildApp } from '../../packages/server/src/http/app.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { defineProcessor, type Processor } from '../../packages/rastro/src/processing/processor.js';
import type { EffectPolicy } from '../../packages/rastro/src/processing/policy.js';
import { createServices, type Services } from '../../packages/server/src/server.js';
import type { EventStore } from '../../packages/rastro/src/store/event-store.js';
import { freshSchema, type Backend } from './databases.js';

/** A processor for the operations tests: writes a `tip` row per stream and notifies once per event. */
export interface TipsWorld {
  processor: Processor;
  /** Handlers fail on `bad` tips until this is set. */
  fixed: boolean;
  /** Replays with a new multiplier change every row: a diff. */
  multiplier: number;
}

export const TIPS_POLICY: EffectPolicy = { notify: { mode: 'apply', onFailure: 'keep' } };

export function tipsWorld(): TipsWorld {
  const world: TipsWorld = {
    fixed: false,
    multiplier: 1,
    processor: defineProcessor({
      name: 'tips',
      handlers: {
        'tip.paid': async (event, ctx) => {
          const data = event.data as { cents: number; bad?: boolean; flaky?: boolean };
          if (data.bad && !world.fixed) throw new Error('cannot handle this tip');
          await ctx.upsert('tip', event.streamId, { cents: data.cents * world.multiplier }, { version: event.streamVersion });
          await ctx.effect('notify', async () => {
            if (data.flaky) throw new Error('the notifier timed out');
            return { sent: true };
          });
        },
      },
    }),
  };
  return world;
}

/** Five tips: tip-3's notification is uncertain, tip-5 is parked; the live run has handled the rest. */
export async function seedTips(store: EventStore, world: TipsWorld): Promise<void> {
  for (const [n, data] of [[1, {}], [2, {}], [3, { flaky: true }], [4, {}], [5, { bad: true }]] as const) {
    await store.append(`tip-${n}`, [{ type: 'tip.paid', data: { cents: n * 100, ...data } }], { expectedVersion: 'no-stream' });
  }
  await runLiveRound(world.processor, { store, policy: TIPS_POLICY, partitions: 2 });
}

export interface OpsApp extends Services {
  app: FastifyInstance;
  schema: string;
  world: TipsWorld;
}

/** The app with the tips processor loaded and an in-process publisher, on a fresh schema. */
export async function opsApp(backend: Backend, options: { processors?: boolean; apiKey?: string } = {}): Promise<OpsApp> {
  const { db, schema } = await freshSchema(backend);
  const services = createServices(db, { schema, snapshotEvery: 100, idempotencyTtlSeconds: 86_400 });
  const world = tipsWorld();
  const publisher = createMemoryPublisher();
  const app = await buildApp({
    ...services,
    apiKey: options.apiKey,
    processors: options.processors === false ? undefined : new Map([[world.processor.name, world.processor]]),
    publisher: () => publisher,
  });
  return { ...services, app, schema, world };
}
