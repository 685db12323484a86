import { describe, expect, it } from 'vitest';
import { createAccountLedger } from '../../packages/rastro/src/accounts/account-ledger.js';
import { InsufficientFundsError } from '../../packages/rastro/src/errors.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema, type Backend } from '../support/databases.js';

/** Two ledgers on one store: two server processes, each remembering the accounts it used. */
async function twoProcesses(backend: Backend) {
  const { db, schema } = await freshSchema(backend);
  const store = createEventStore(db, { schema });
  return { db, store, a: createAccountLedger(store, { snapshotEvery: 10 }), b: createAccountLedger(store, { snapshotEvery: 10 }) };
}

describe.each(backends())('remembered accounts on $name', (backend) => {
  it('shows on a read what another process appended since this one remembered the account', async () => {
    const { a, b } = await twoProcesses(backend);
    const { id } = await a.open('Ana');
    await a.deposit(id, 10);
    await b.deposit(id, 5);
    expect(await a.get(id)).toMatchObject({ balance: 15, version: 3 });
  });

  it('never lets a stale remembered balance through: a withdrawal the account can no longer cover is refused', async () => {
    const { a, b, store } = await twoProcesses(backend);
    const { id } = await a.open('Ana');
    await a.deposit(id, 10);
    await b.withdraw(id, 10);
    // a remembers a balance of 10 at version 2; the account is at 0, version 3.
    await expect(a.withdraw(id, 10)).rejects.toBeInstanceOf(InsufficientFundsError);
    expect((await store.readStream(`account-${id}`)).map((event) => event.type)).toEqual(['AccountOpened', 'AccountDeposited', 'AccountWithdrawn']);
  });

  it('refuses nothing on a stale remembered balance: a withdrawal covered by another process’s deposit succeeds', async () => {
    const { a, b } = await twoProcesses(backend);
    const { id } = await a.open('Ana');
    await b.deposit(id, 100);
    // a remembers a balance of 0; the refusal is decided on the account read afresh.
    expect(await a.withdraw(id, 60)).toMatchObject({ version: 3 });
    expect(await b.get(id)).toMatchObject({ balance: 40, version: 3 });
  });

  it('remembers nothing a rolled-back transaction wrote', async () => {
    const { db, a } = await twoProcesses(backend);
    const { id } = await a.open('Ana');
    await expect(
      db.transaction(async (tx) => {
        await a.deposit(id, 100, { tx });
        throw new Error('the caller changed its mind');
      }),
    ).rejects.toThrow('changed its mind');
    expect(await a.get(id)).toMatchObject({ balance: 0, version: 1 });
    await db.transaction((tx) => a.deposit(id, 7, { tx }));
    expect(await a.get(id)).toMatchObject({ balance: 7, version: 2 });
    expect(await a.withdraw(id, 7)).toMatchObject({ version: 3 });
  });

  it('reads an account that moved far past the remembered version from its snapshot, with the same balance', async () => {
    const { a, b } = await twoProcesses(backend);
    const { id } = await a.open('Ana');
    await a.deposit(id, 1);
    for (let i = 0; i < 150; i++) await b.deposit(id, 2);
    expect(await a.get(id)).toMatchObject({ balance: 301, version: 152 });
  });
  it('drops a remembered account whose stream was written again from an earlier version, as after a failover that lost its tail', async () => {
    const { db, store, a, b } = await twoProcesses(backend);
    const s = `"${store.schema}"`;
    const { id } = await a.open('Ana');
    await a.deposit(id, 100);
    await a.deposit(id, 200);
    expect(await a.get(id)).toMatchObject({ balance: 300, version: 3 });
    // The promoted standby never received versions 2 and 3: the stream is back at version 1.
    await db.query(`alter table ${s}.events disable trigger events_immutable_rows`);
    await db.query(`delete from ${s}.events where stream_id = $1 and stream_version > 1`, [`account-${id}`]);
    await db.query(`alter table ${s}.events enable always trigger events_immutable_rows`);
    await db.query(`update ${s}.streams set version = 1, head = (select hash from ${s}.events where stream_id = $1 and stream_version = 1), base = null where stream_id = $1`, [`account-${id}`]);
    // Another process writes versions 2 and 3 again, other events at the versions a remembers.
    await b.deposit(id, 10);
    await b.deposit(id, 20);
    // a remembers a balance of 300 at version 3: the withdrawal is decided on the stream as it is.
    await expect(a.withdraw(id, 250)).rejects.toBeInstanceOf(InsufficientFundsError);
    expect(await a.get(id)).toMatchObject({ balance: 30, version: 3 });
    expect(await a.withdraw(id, 30)).toMatchObject({ version: 4 });
    expect(await b.get(id)).toMatchObject({ balance: 0, version: 4 });
  });
});
