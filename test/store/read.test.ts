import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../packages/rastro/src/errors.js';
import { LOG_START } from '../../packages/rastro/src/store/event.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema, type Backend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

async function storeOn(backend: Backend): Promise<EventStore> {
  const { db, schema } = await freshSchema(backend);
  return createEventStore(db, { schema });
}

describe.each(backends())('reading on $name', (backend) => {
  it('reads a stream between versions, inclusive', async () => {
    const store = await storeOn(backend);
    await store.append('s', [1, 2, 3, 4, 5].map((n) => ({ type: 'n', data: { n } })));
    const events = await store.readStream('s', { fromVersion: 2, toVersion: 4 });
    expect(events.map((event) => event.data.n)).toEqual([2, 3, 4]);
    expect(await store.readStream('missing')).toEqual([]);
  });

  it('reads the whole log in global order, in pages that resume after the last event', async () => {
    const store = await storeOn(backend);
    for (let i = 0; i < 7; i++) await store.append(`s-${i % 3}`, [{ type: 'n', data: { i } }]);
    const seen: number[] = [];
    let after = LOG_START;
    for (;;) {
      const page = await store.readAll({ after, limit: 3 });
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(3);
      seen.push(...page.map((event) => event.data.i as number));
      after = page[page.length - 1]!;
    }
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('filters by type and by an occurredAt window [from, to)', async () => {
    const store = await storeOn(backend);
    const at = (hour: number) => new Date(Date.UTC(2026, 0, 1, hour));
    await store.append('a', [
      { type: 'order.paid', data: { h: 1 }, occurredAt: at(1) },
      { type: 'order.shipped', data: { h: 2 }, occurredAt: at(2) },
      { type: 'order.paid', data: { h: 3 }, occurredAt: at(3) },
      { type: 'order.paid', data: { h: 4 }, occurredAt: at(4) },
    ]);
    const paid = await store.readAll({ types: ['order.paid'] });
    expect(paid.map((event) => event.data.h)).toEqual([1, 3, 4]);
    const window = await store.readAll({ from: at(2), to: at(4) });
    expect(window.map((event) => event.data.h)).toEqual([2, 3]);
  });

  it.each([
    ['a limit of 0', { limit: 0 }, 'limit'],
    ['a fractional limit', { limit: 1.5 }, 'limit'],
    ['an over-large limit', { limit: 10_001 }, 'limit'],
    ['a checkpoint without position', { after: { txOrder: 1 } }, 'after'],
    ['types that are not strings', { types: [1] }, 'types'],
    ['an invalid from', { from: new Date('x') }, 'from'],
    ['a to that is a string', { to: '2026-01-01' }, 'to'],
  ])('rejects %s', async (_case, options, field) => {
    const store = await storeOn(backend);
    const err = await store.readAll(options as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ field });
  });

  it('rejects invalid stream reads', async () => {
    const store = await storeOn(backend);
    await expect(store.readStream('')).rejects.toMatchObject({ field: 'streamId' });
    await expect(store.readStream('s', { fromVersion: -1 })).rejects.toMatchObject({ field: 'fromVersion' });
  });

  it('refuses UPDATE, DELETE and TRUNCATE on events, even with replication triggers off', async () => {
    const store = await storeOn(backend);
    await store.append('s', [{ type: 'n', data: { n: 1 } }]);
    const events = `"${store.schema}".events`;
    await expect(store.db.query(`update ${events} set data = '{}'`)).rejects.toMatchObject({ sqlState: '23001' });
    await expect(store.db.query(`delete from ${events}`)).rejects.toMatchObject({ sqlState: '23001' });
    await expect(store.db.query(`truncate ${events}`)).rejects.toMatchObject({ sqlState: '23001' });
    await expect(
      store.db.transaction(async (tx) => {
        await tx.query('set local session_replication_role = replica');
        await tx.query(`delete from ${events}`);
      }),
    ).rejects.toMatchObject({ sqlState: '23001' });
    expect((await store.readStream('s'))[0]!.data).toEqual({ n: 1 });
  });

  it('delivers new events to a subscriber, in order, from its checkpoint', async () => {
    const store = await storeOn(backend);
    await store.append('s', [{ type: 'n', data: { n: 0 } }]);
    // Readers wait for transactions open anywhere in the cluster (other suites' too).
    const first = await eventually(async () => (await store.readAll())[0], 'the first event, once readers reach it');
    const received: number[] = [];
    let resolveAll!: () => void;
    const all = new Promise<void>((resolve) => (resolveAll = resolve));
    const subscription = store.subscribe(first!, (event) => {
      received.push(event.data.n as number);
      if (received.length === 3) resolveAll();
    });
    await store.append('s', [{ type: 'n', data: { n: 1 } }]);
    await store.append('t', [{ type: 'n', data: { n: 2 } }, { type: 'n', data: { n: 3 } }]);
    await all;
    await subscription.stop();
    expect(received).toEqual([1, 2, 3]);
    expect(subscription.checkpoint.position).toBe((await store.readAll()).at(-1)!.position);
  });

  it('stops a subscription whose handler throws and reports the error', async () => {
    const store = await storeOn(backend);
    await store.append('s', [{ type: 'n', data: { n: 1 } }, { type: 'n', data: { n: 2 } }]);
    const handled: number[] = [];
    const subscription = store.subscribe(LOG_START, (event) => {
      if (event.data.n === 2) throw new Error('handler failed');
      handled.push(event.data.n as number);
    });
    await expect(subscription.done).rejects.toThrow('handler failed');
    expect(handled).toEqual([1]);
    expect(subscription.checkpoint.position).toBe((await store.readAll({ limit: 1 }))[0]!.position);
  });
});
