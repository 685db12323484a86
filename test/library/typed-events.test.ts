import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createAccountLedger } from '../../packages/rastro/src/accounts/account-ledger.js';
import { ACCOUNT_DEPOSITED, ACCOUNT_OPENED, ACCOUNT_WITHDRAWN, accountStreamId } from '../../packages/rastro/src/accounts/account.js';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { ValidationError } from '../../packages/rastro/src/errors.js';
import { runRelay } from '../../packages/rastro/src/outbox/relay.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { parkedEvents } from '../../packages/rastro/src/processing/parking.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { projections } from '../../packages/rastro/src/processing/projections.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { defineEvents, EventVersionError } from '../../packages/rastro/src/store/event-types.js';
import type { RecordedEvent } from '../../packages/rastro/src/store/event.js';
import { LOG_START } from '../../packages/rastro/src/store/event.js';
import { backends, freshSchema } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

// One event type in three versions, as a service's history has it after two changes of shape:
//   v1 { amount }                       (a number of reais)
//   v2 { amountCents }                  (cents)
//   v3 { amountCents, currency }        (a currency too)
// Each version's code appended its events to the same stream; the current code reads them all.

type PaidV1 = { orderId: string; amount: number };
type PaidV2 = { orderId: string; amountCents: number };
type PaidV3 = { orderId: string; amountCents: number; currency: string };

const v1 = defineEvents<{ 'order.paid': PaidV1 }>({ 'order.paid': {} });
const v2 = defineEvents<{ 'order.paid': PaidV2 }>({ 'order.paid': { version: 2, upcast: { 1: (d: PaidV1): PaidV2 => ({ orderId: d.orderId, amountCents: d.amount * 100 }) } } });
const v3 = defineEvents<{ 'order.paid': PaidV3 }>({
  'order.paid': {
    version: 3,
    upcast: {
      1: (d: PaidV1): PaidV2 => ({ orderId: d.orderId, amountCents: d.amount * 100 }),
      2: (d: PaidV2): PaidV3 => ({ ...d, currency: 'BRL' }),
    },
  },
});
/** A later version, written by code newer than the one that reads it. */
const v4 = defineEvents<{ 'order.paid': PaidV3 & { tip: number } }>({
  'order.paid': { version: 4, upcast: { 1: (d: PaidV1) => d, 2: (d: PaidV2) => d, 3: (d: PaidV3) => ({ ...d, tip: 0 }) } },
});

const CURRENT: PaidV3[] = [
  { orderId: 'o-1', amountCents: 1_000, currency: 'BRL' },
  { orderId: 'o-1', amountCents: 2_550, currency: 'BRL' },
  { orderId: 'o-1', amountCents: 399, currency: 'USD' },
  { orderId: 'o-1', amountCents: 4_000, currency: 'BRL' },
];

/** The history: versions 1, 2, 3 and 1 again, mixed in one stream. */
async function historyOf(db: Awaited<ReturnType<typeof freshSchema>>['db'], schema: string) {
  await createEventStore(db, { schema, events: v1 }).append('order-o-1', [{ type: 'order.paid', data: { orderId: 'o-1', amount: 10 } }]);
  await createEventStore(db, { schema, events: v2 }).append('order-o-1', [{ type: 'order.paid', data: { orderId: 'o-1', amountCents: 2_550 } }]);
  await createEventStore(db, { schema, events: v3 }).append('order-o-1', [{ type: 'order.paid', data: CURRENT[2]! }]);
  await createEventStore(db, { schema, events: v1 }).append('order-o-1', [{ type: 'order.paid', data: { orderId: 'o-1', amount: 40 } }]);
  const { rows } = await db.query<{ schema_version: number }>(`select schema_version from "${schema}".events order by position`);
  expect(rows.map((row) => row.schema_version)).toEqual([1, 2, 3, 1]);
  return createEventStore(db, { schema, events: v3 });
}

/** A processor of the current code: it keeps a running total per currency, from the current shape only. */
function totals(seen: PaidV3[] = []) {
  return defineProcessor({
    name: 'totals',
    events: v3,
    effects: [],
    handlers: {
      'order.paid': async (event, ctx) => {
        seen.push(event.data);
        await ctx.upsert('totals', `${event.streamId}:${event.streamVersion}`, { ...event.data }, { version: event.streamVersion });
      },
    },
  });
}

describe.each(backends())('typed events and upcasting on %s', (backend) => {
  it('brings versions 1, 2 and 3 of one type to version 3 on readStream, readAll and subscribe, and stores each as it was', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = await historyOf(db, schema);
    expect((await store.readStream('order-o-1')).map((e) => e.data)).toEqual(CURRENT);
    expect((await store.readAll()).map((e) => e.data)).toEqual(CURRENT);
    const got: PaidV3[] = [];
    const subscription = store.subscribe(LOG_START, (event) => void got.push(event.data));
    try {
      await eventually(() => got.length === 4, 'the subscription to deliver all four');
    } finally {
      await subscription.stop();
    }
    expect(got).toEqual(CURRENT);
    // The stored events never change: each keeps the shape and version it was appended with.
    const { rows } = await db.query<{ data: unknown; schema_version: number }>(`select data, schema_version from "${schema}".events order by position`);
    expect(rows[0]).toEqual({ data: { orderId: 'o-1', amount: 10 }, schema_version: 1 });
  });

  it('hands a live run, a replay and a simulate the current shape, and they agree on the state', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = await historyOf(db, schema);
    const seen: PaidV3[] = [];
    await runLiveRound(totals(seen), { store, policy: {} });
    expect(seen).toEqual(CURRENT);
    const rows = projections(store);
    const live = await rows.list('totals');

    const replayed: PaidV3[] = [];
    const replay = await runReplay(totals(replayed), { store, policy: {}, runId: 'fix-1' });
    expect(replay.counters['events']).toBe(4);
    expect(replayed).toEqual(CURRENT);
    expect(await rows.list('totals')).toEqual(live);

    const simulated: PaidV3[] = [];
    await runReplay(totals(simulated), { store, policy: {}, runId: 'sim-1', simulate: true });
    expect(simulated).toEqual(CURRENT);
    expect(live.map((row) => row.doc)).toEqual(CURRENT);
  });

  it("publishes a relayed event's current shape", async () => {
    const { db, schema } = await freshSchema(backend);
    const store = await historyOf(db, schema);
    const publisher = createMemoryPublisher();
    const relay = await runRelay({ store, publisher, events: { types: ['order.paid'] }, pollIntervalMs: 20 });
    try {
      await eventually(() => publisher.published.length === 4, 'four messages');
    } finally {
      await relay.stop();
    }
    expect(publisher.published.map((m) => m.payload)).toEqual(CURRENT);
  });

  it("folds an account's balance from deposits stored in an older shape", async () => {
    const { db, schema } = await freshSchema(backend);
    const old = createEventStore(db, { schema, events: defineEvents<Record<string, { owner?: string; cents?: number }>>({ [ACCOUNT_OPENED]: {}, [ACCOUNT_DEPOSITED]: {}, [ACCOUNT_WITHDRAWN]: {} }) });
    const account = '0b9a5f6e-4a8e-4f5e-9c1a-7f3d2b1c0a99';
    await old.append(accountStreamId(account), [{ type: ACCOUNT_OPENED, data: { owner: 'ana' } }, { type: ACCOUNT_DEPOSITED, data: { cents: 700 } }, { type: ACCOUNT_WITHDRAWN, data: { cents: 200 } }]);
    const toAmount = (d: { cents: number }) => ({ amount: d.cents });
    const current = createEventStore(db, {
      schema,
      events: defineEvents<Record<string, Record<string, unknown>>>({
        [ACCOUNT_OPENED]: {},
        [ACCOUNT_DEPOSITED]: { version: 2, upcast: { 1: toAmount } },
        [ACCOUNT_WITHDRAWN]: { version: 2, upcast: { 1: toAmount } },
      }),
    });
    expect((await createAccountLedger(current, { snapshotEvery: 0 }).get(account)).balance).toBe(500);
  });

  it('parks an event whose version no upcaster reaches, naming its type and version, and handles the rest', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = await historyOf(db, schema);
    await createEventStore(db, { schema, events: v4 }).append('order-o-2', [{ type: 'order.paid', data: { orderId: 'o-2', amountCents: 1, currency: 'BRL', tip: 5 } }]);
    const seen: PaidV3[] = [];
    await runLiveRound(totals(seen), { store, policy: {} });
    expect(seen).toEqual(CURRENT);
    const parked = await parkedEvents(store).list({ runId: 'live:totals' });
    expect(parked).toHaveLength(1);
    expect(parked[0]).toMatchObject({ streamId: 'order-o-2', reason: 'failed' });
    expect(parked[0]!.error).toMatch(/of type order\.paid is stored at version 4, newer than the 3 this code reads/);
    // A read names it the same way.
    await expect(store.readStream('order-o-2')).rejects.toBeInstanceOf(EventVersionError);
  });

  it('refuses an append whose data does not match its schema, naming the field, and stores nothing', async () => {
    const { db, schema } = await freshSchema(backend);
    const events = defineEvents({ 'charge.captured': z.object({ chargeId: z.string(), cents: z.number().int().positive() }) });
    const store = createEventStore(db, { schema, events });
    const refused = await store.append('charge-1', [{ type: 'charge.captured', data: { chargeId: 'c-1', cents: 1.5 } }]).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).field).toBe('events[0].data.cents');
    const unknownType = await store.append('charge-1', [{ type: 'charge.capturd', data: {} } as never]).catch((err: unknown) => err);
    expect((unknownType as ValidationError).field).toBe('events[0].type');
    expect(await store.streamVersion('charge-1')).toBe(0);
    expect((await db.query(`select count(*)::int as n from "${schema}".events`)).rows[0]).toEqual({ n: 0 });
    await store.append('charge-1', [{ type: 'charge.captured', data: { chargeId: 'c-1', cents: 150 } }]);
    expect((await store.readStream('charge-1'))[0]!.data).toEqual({ chargeId: 'c-1', cents: 150 });
  });
});

describe.each(backends())("a processor's declared effects and its run's policy on %s", (backend) => {
  const calls: string[] = [];
  const notifier = defineProcessor({
    name: 'commissions',
    effects: ['notify-seller'],
    handlers: {
      'order.paid': async (_event: RecordedEvent, ctx) => {
        await ctx.effect('notify-seller', async (key) => void calls.push(key));
      },
    },
  });

  it('refuses a policy key that names no declared effect, and a declared effect with no rule, before reading an event', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await store.append('order-1', [{ type: 'order.paid', data: {} }]);
    calls.length = 0;
    const typo = await runReplay(notifier, { store, policy: { notify_seller: { mode: 'apply', onFailure: 'keep' } } as never }).catch((err: unknown) => err);
    expect(typo).toBeInstanceOf(ValidationError);
    expect((typo as ValidationError).message).toBe('policy.notify_seller: names no effect type of processor commissions; its effect types are notify-seller');
    const none = await runLiveRound(notifier, { store, policy: {} as never }).catch((err: unknown) => err);
    expect((none as ValidationError).field).toBe('policy.notify-seller');
    expect(calls).toEqual([]);
    expect((await db.query(`select count(*)::int as n from "${schema}".processor_runs`)).rows[0]).toEqual({ n: 0 });
    await runLiveRound(notifier, { store, policy: { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } });
    expect(calls).toHaveLength(1);
  });

  it('parks an event whose handler asks for an effect type the processor does not declare', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await store.append('order-1', [{ type: 'order.paid', data: {} }]);
    const sloppy = defineProcessor({
      name: 'sloppy',
      effects: ['notify-seller'],
      handlers: { 'order.paid': async (_event, ctx) => void (await ctx.effect('notify_seller' as 'notify-seller', async () => 'sent')) },
    });
    await runLiveRound(sloppy, { store, policy: { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } });
    const [parked] = await parkedEvents(store).list({ runId: 'live:sloppy' });
    expect(parked?.error).toMatch(/"notify_seller" is not an effect type processor sloppy declares \(notify-seller\)/);
  });
});
