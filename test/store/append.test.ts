import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConcurrencyError, EventIdConflictError, ValidationError } from '../../packages/rastro/src/errors.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema, type Backend } from '../support/databases.js';

const paid = (amountCents: number) => ({ type: 'order.paid', data: { amountCents } });

async function storeOn(backend: Backend): Promise<EventStore> {
  const { db, schema } = await freshSchema(backend);
  return createEventStore(db, { schema });
}

async function countEvents(store: EventStore): Promise<number> {
  const { rows } = await store.db.query<{ n: number }>(`select count(*)::int as n from "${store.schema}".events`);
  return rows[0]!.n;
}

const all = backends();

describe.each(all)('append on $name', (backend) => {
  it('appends a batch and returns the stream version and global positions', async () => {
    const store = await storeOn(backend);
    const first = await store.append('order-1', [paid(100), paid(200)], { expectedVersion: 'no-stream' });
    expect(first.streamVersion).toBe(2);
    expect(first.positions).toHaveLength(2);
    expect(first.positions[1]).toBeGreaterThan(first.positions[0]!);
    const second = await store.append('order-1', [paid(300)], { expectedVersion: 2 });
    expect(second.streamVersion).toBe(3);
    const events = await store.readStream('order-1');
    expect(events.map((event) => [event.streamVersion, event.data.amountCents])).toEqual([
      [1, 100],
      [2, 200],
      [3, 300],
    ]);
    expect(events[0]).toMatchObject({ streamId: 'order-1', type: 'order.paid', metadata: {} });
    expect(events[0]!.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps metadata and occurredAt as given', async () => {
    const store = await storeOn(backend);
    const occurredAt = new Date('2026-03-01T10:00:00.123Z');
    const metadata = { correlationId: 'c-1', causationId: 'e-0', traceparent: '00-abc-def-01' };
    await store.append('s', [{ ...paid(1), metadata, occurredAt }]);
    const [event] = await store.readStream('s');
    expect(event!.metadata).toEqual(metadata);
    expect(event!.occurredAt.toISOString()).toBe(occurredAt.toISOString());
  });

  it.each([
    ['a number that is behind', 1, 2],
    ['a number that is ahead', 5, 2],
    ["'no-stream' for an existing stream", 'no-stream', 2],
    ['0 for an existing stream', 0, 2],
  ] as const)('refuses %s with ConcurrencyError and writes nothing', async (_case, expectedVersion, actual) => {
    const store = await storeOn(backend);
    await store.append('s', [paid(1), paid(2)]);
    const err = await store.append('s', [paid(3)], { expectedVersion }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConcurrencyError);
    expect(err).toMatchObject({ code: 'RASTRO_CONCURRENCY', expected: expectedVersion, actual });
    expect(await countEvents(store)).toBe(2);
    expect(await store.streamVersion('s')).toBe(2);
  });

  it("refuses 'exists' and a positive number for a stream that does not exist", async () => {
    const store = await storeOn(backend);
    await expect(store.append('missing', [paid(1)], { expectedVersion: 'exists' })).rejects.toMatchObject({ actual: 0 });
    await expect(store.append('missing', [paid(1)], { expectedVersion: 1 })).rejects.toBeInstanceOf(ConcurrencyError);
    expect(await countEvents(store)).toBe(0);
  });

  it("accepts 'any' and 'exists' on an existing stream and 0 on a new one", async () => {
    const store = await storeOn(backend);
    expect((await store.append('s', [paid(1)], { expectedVersion: 0 })).streamVersion).toBe(1);
    expect((await store.append('s', [paid(2)], { expectedVersion: 'exists' })).streamVersion).toBe(2);
    expect((await store.append('s', [paid(3)], { expectedVersion: 'any' })).streamVersion).toBe(3);
  });

  it('returns the first result when the same events are appended again, and appends nothing', async () => {
    const store = await storeOn(backend);
    const batch = [{ ...paid(1), id: randomUUID() }, { ...paid(2), id: randomUUID() }];
    const first = await store.append('s', batch, { expectedVersion: 'no-stream' });
    await store.append('s', [paid(3)]);
    const retry = await store.append('s', batch, { expectedVersion: 'no-stream' });
    expect(retry).toEqual(first);
    const retryAny = await store.append('s', batch);
    expect(retryAny).toEqual(first);
    expect(await countEvents(store)).toBe(3);
  });

  it('appends once when 20 retries of the same batch race, and gives each the same result', async () => {
    const store = await storeOn(backend);
    await store.append('s', [paid(0)]);
    const batch = [{ ...paid(1), id: randomUUID() }, { ...paid(2), id: randomUUID() }];
    for (const expectedVersion of ['any', 1] as const) {
      const results = await Promise.all(Array.from({ length: 20 }, () => store.append('s', batch, { expectedVersion })));
      expect(new Set(results.map((result) => JSON.stringify(result))).size).toBe(1);
      expect(results[0]!.streamVersion).toBe(3);
    }
    expect(await countEvents(store)).toBe(3);
  });

  it('refuses an event id already in the log with other content, in another stream, or mixed with new events', async () => {
    const store = await storeOn(backend);
    const id = randomUUID();
    await store.append('s', [{ ...paid(1), id }]);
    await expect(store.append('s', [{ ...paid(2), id }])).rejects.toBeInstanceOf(EventIdConflictError);
    await expect(store.append('other', [{ ...paid(1), id }])).rejects.toMatchObject({ code: 'RASTRO_EVENT_ID_CONFLICT' });
    await expect(store.append('s', [{ ...paid(1), id }, paid(5)])).rejects.toBeInstanceOf(EventIdConflictError);
    expect(await countEvents(store)).toBe(1);
  });

  it('commits the events with the caller’s own rows, or neither', async () => {
    const store = await storeOn(backend);
    const db = store.db;
    await db.query(`create table "${store.schema}".orders (id text primary key)`);
    await db.transaction(async (tx) => {
      await tx.query(`insert into "${store.schema}".orders values ('o-1')`);
      await store.append('order-o-1', [paid(1)], { tx });
    });
    await expect(
      db.transaction(async (tx) => {
        await tx.query(`insert into "${store.schema}".orders values ('o-2')`);
        await store.append('order-o-2', [paid(2)], { tx });
        throw new Error('the service failed after appending');
      }),
    ).rejects.toThrow('the service failed');
    expect(await store.streamVersion('order-o-1')).toBe(1);
    expect(await store.streamVersion('order-o-2')).toBe(0);
    const { rows } = await db.query<{ id: string }>(`select id from "${store.schema}".orders`);
    expect(rows.map((row) => row.id)).toEqual(['o-1']);
  });

  it('returns the first result for a retry inside the caller’s transaction and keeps it usable', async () => {
    const store = await storeOn(backend);
    const batch = [{ ...paid(1), id: randomUUID() }];
    const first = await store.append('s', batch);
    await store.db.transaction(async (tx) => {
      expect(await store.append('s', batch, { tx })).toEqual(first);
      await store.append('s', [paid(2)], { tx, expectedVersion: 1 });
    });
    expect(await store.streamVersion('s')).toBe(2);
    expect(await countEvents(store)).toBe(2);
  });

  it('keeps the caller’s transaction usable after a refused append', async () => {
    const store = await storeOn(backend);
    await store.append('s', [paid(1)]);
    await store.db.transaction(async (tx) => {
      await expect(store.append('s', [paid(2)], { tx, expectedVersion: 'no-stream' })).rejects.toBeInstanceOf(ConcurrencyError);
      await store.append('s', [paid(3)], { tx, expectedVersion: 1 });
    });
    expect(await store.streamVersion('s')).toBe(2);
  });

  it.each([
    ['an empty stream id', () => ['', [paid(1)], {}], 'streamId'],
    ['an over-long stream id', () => ['x'.repeat(501), [paid(1)], {}], 'streamId'],
    ['an empty batch', () => ['s', [], {}], 'events'],
    ['an empty type', () => ['s', [{ type: '', data: {} }], {}], 'events[0].type'],
    ['an over-long type', () => ['s', [{ type: 't'.repeat(201), data: {} }], {}], 'events[0].type'],
    ['data that is an array', () => ['s', [{ type: 't', data: [1] }], {}], 'events[0].data'],
    ['data that is null', () => ['s', [{ type: 't', data: null }], {}], 'events[0].data'],
    ['data that is a string', () => ['s', [{ type: 't', data: 'x' }], {}], 'events[0].data'],
    ['data with a NUL character', () => ['s', [{ type: 't', data: { a: '\u0000' } }], {}], 'events[0].data.a'],
    ['data with a lone surrogate in a key', () => ['s', [{ type: 't', data: { b: { '\ud800': 1 } } }], {}], 'events[0].data.b["\\ud800"]'],
    ['metadata that is not an object', () => ['s', [{ type: 't', data: {}, metadata: 3 }], {}], 'events[0].metadata'],
    ['an id that is not a UUID', () => ['s', [{ id: 'x', type: 't', data: {} }], {}], 'events[0].id'],
    ['an invalid occurredAt', () => ['s', [{ type: 't', data: {}, occurredAt: new Date('nope') }], {}], 'events[0].occurredAt'],
    ['a repeated id', () => ['s', [{ id: '00000000-0000-4000-8000-000000000001', type: 't', data: {} }, { id: '00000000-0000-4000-8000-000000000001', type: 't', data: {} }], {}], 'events'],
    ['a negative expected version', () => ['s', [paid(1)], { expectedVersion: -1 }], 'expectedVersion'],
    ['a fractional expected version', () => ['s', [paid(1)], { expectedVersion: 1.5 }], 'expectedVersion'],
    ['an unknown expected version', () => ['s', [paid(1)], { expectedVersion: 'latest' }], 'expectedVersion'],
  ])('rejects %s with a ValidationError naming the field and writes nothing', async (_case, args, field) => {
    const store = await storeOn(backend);
    const [streamId, events, options] = args() as unknown as Parameters<EventStore['append']>;
    const err = await store.append(streamId, events, options).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ code: 'RASTRO_VALIDATION', field });
    expect((err as Error).message).toContain(field);
    expect(await countEvents(store)).toBe(0);
  });
});

describe('the embedded database', () => {
  it('fails at once, instead of hanging, when a transaction’s callback queries the database outside it', async () => {
    const { db } = await freshSchema(all[0]!);
    const err = await db.transaction(async () => db.query('select 1')).catch((e: unknown) => e);
    expect((err as Error).message).toContain('send it on the transaction');
    expect((await db.query<{ one: number }>('select 1 as one')).rows[0]!.one).toBe(1);
  });
});
