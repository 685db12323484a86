import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.js';
import { testApp } from '../support/app.js';

describe.each(backends())('account snapshots on $name', (backend) => {
  it('gives the same balances with snapshots, without them, and after a rebuild', async () => {
    const t = await testApp(backend, { snapshotEvery: 5 });
    const ids = [await t.openAccount('A'), await t.openAccount('B'), await t.openAccount('C')];
    let seed = 7;
    const next = () => (seed = (seed * 48271) % 2147483647);
    for (let i = 0; i < 60; i++) {
      const id = ids[i % 3]!;
      const route = next() % 3 === 0 ? 'withdraw' : 'deposit';
      await t.post(`/accounts/${id}/${route}`, { amount: 1 + (next() % 50) });
    }
    const balances = async () => Promise.all(ids.map(async (id) => (await t.get(`/accounts/${id}/balance`)).json()));
    const withSnapshots = await balances();

    const snapshotRows = async () =>
      (await t.db.query<{ stream_id: string; version: number }>(`select stream_id, version from "${t.schema}".snapshots order by stream_id`)).rows;
    const written = await snapshotRows();
    expect(written).toHaveLength(3);
    expect(written.every((row) => row.version % 5 === 0)).toBe(true);

    // The replay from events alone, with no snapshot to start from.
    const replayed = await Promise.all(
      ids.map(async (id) => {
        const events = await t.store.readStream(`account-${id}`);
        const balance = events.reduce((sum, event) => sum + (event.type === 'AccountDeposited' ? 1 : event.type === 'AccountWithdrawn' ? -1 : 0) * ((event.data.amount as number) ?? 0), 0);
        return { accountId: id, balance, version: events.length };
      }),
    );
    expect(withSnapshots).toEqual(replayed);

    await t.store.dropSnapshots('account-');
    expect(await snapshotRows()).toEqual([]);
    expect(await balances()).toEqual(withSnapshots);

    const { written: rebuilt } = await t.ledger.rebuildSnapshots();
    expect(rebuilt).toBe(3);
    expect(await balances()).toEqual(withSnapshots);
  });

  it('starts a balance read from the snapshot: a corrupted snapshot shows, proving it is used', async () => {
    // No account remembered between requests: every read starts from the stored snapshot.
    const t = await testApp(backend, { snapshotEvery: 2, accountCacheSize: 0 });
    const id = await t.openAccount();
    await t.post(`/accounts/${id}/deposit`, { amount: 10 });
    await t.post(`/accounts/${id}/deposit`, { amount: 5 });
    await t.db.query(`update "${t.schema}".snapshots set state = jsonb_set(state, '{balance}', '1000')`);
    expect((await t.get(`/accounts/${id}/balance`)).json()).toMatchObject({ balance: 1005, version: 3 });
    await t.ledger.rebuildSnapshots();
    expect((await t.get(`/accounts/${id}/balance`)).json()).toMatchObject({ balance: 15, version: 3 });
  });
});
