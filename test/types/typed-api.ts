// Must compile with no error: the typed API used as the docs show it, with no casts.
import { expectTypeOf } from 'vitest';
import pg from 'pg';
import { createEventStore, fromKysely, openDatabase, runLive, runReplay, type EffectOutcome, type RecordedEvent } from 'rastro';
import { chargeEvents, commissions, orderEvents, type OrderPaid } from './order-events.js';

export async function typedApi(pool: pg.Pool, client: pg.PoolClient) {
  const db = await openDatabase({ pool });
  const store = createEventStore(db, { events: orderEvents });
  const { streamVersion } = await store.append('order-1', [{ type: 'order.paid', data: { orderId: '1', amountCents: 12_500, percent: 8 } }], { tx: client });
  expectTypeOf(streamVersion).toEqualTypeOf<number>();
  await store.append('order-1', [{ type: 'order.refunded', data: { orderId: '1', amountCents: 100 } }], { expectedVersion: streamVersion });

  for (const event of await store.readStream('order-1')) {
    if (event.type === 'order.paid') expectTypeOf(event.data).toEqualTypeOf<OrderPaid>();
    else expectTypeOf(event.data).toEqualTypeOf<{ orderId: string; amountCents: number }>();
  }
  const all = await store.readAll({ types: ['order.refunded'] });
  expectTypeOf(all).toEqualTypeOf<RecordedEvent<typeof orderEvents extends { events?: infer E } ? NonNullable<E> : never>[]>();
  store.subscribe({ txOrder: 0, position: 0 }, (event) => {
    expectTypeOf(event.type).toEqualTypeOf<'order.paid' | 'order.refunded'>();
  });

  const charges = createEventStore(pool, { events: chargeEvents });
  await charges.append('charge-1', [{ type: 'charge.captured', data: { chargeId: 'c1', cents: 100 } }]);
  const [captured] = await charges.readStream('charge-1');
  if (captured?.type === 'charge.failed') expectTypeOf(captured.data.reason).toEqualTypeOf<string>();

  await runLive(commissions, { store, policy: { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } });
  await runReplay(commissions, { store, policy: { 'notify-seller': { mode: 'suppress', onFailure: 'keep' } }, simulate: true });

  // Untyped, as before: any type name, data a JSON object.
  const untyped = createEventStore(db);
  await untyped.append('x', [{ type: 'anything', data: { n: 1 } }]);
  const [first] = await untyped.readStream('x');
  expectTypeOf(first!.data).toEqualTypeOf<Record<string, unknown>>();
  expectTypeOf<EffectOutcome<string>>().not.toBeAny();
  return fromKysely;
}
