import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Transaction } from '../../packages/rastro/src/db/database.js';
import { startAcquirerFake, type AcquirerFake } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { buildApp } from '../../packages/server/src/http/app.js';
import { createServices } from '../../packages/server/src/server.js';
import { backends, freshSchema, type Backend } from '../support/databases.js';

/**
 * The statements each request sends to the database: its round trips, the database's own work.
 * A change that adds one fails here; one that removes one too, so that the budget, here and in
 * docs/BENCHMARKS.md ("Round trips per request"), says what the route costs. Wake-up
 * notifications after a commit (at most one per 10 ms, shared by every request) are not counted.
 */
const BUDGETS = {
  /** The append at the version the process remembers. */
  deposit: 1,
  /** The account read from its snapshot first, then the append. */
  'deposit into an account the process does not remember': 2,
  /** The append, and the key with its response, in one statement. */
  'deposit with an Idempotency-Key': 1,
  /** The statement, undone by the taken key, then the key's first response. */
  'deposit with an Idempotency-Key, retried': 2,
  withdraw: 1,
  /** The events after the remembered version (none). */
  balance: 1,
  /** The charge, its reservation and ChargeStarted; the call to the acquirer; the outcome and ChargeCaptured. */
  charge: 2,
  /** The snapshot appended by its content's id. */
  'webhook (order snapshot)': 1,
  /** The append, refused by the event id, then the stored event compared. */
  'webhook (order snapshot), redelivered': 2,
} as const;

const NOTIFY = /pg_notify/;

/** The database as the services see it, recording every statement sent (begin and commit included). */
function recording(db: Database) {
  const sent: string[] = [];
  const note = (text: string) => sent.push(text.replace(/\s+/g, ' ').trim().slice(0, 90));
  const counted: Database = {
    ...db,
    query: (text, values, options) => {
      note(text);
      return db.query(text, values, options);
    },
    transaction: (fn) => {
      note('begin');
      return db
        .transaction((tx) => fn({ ...tx, query: (text, values, options) => (note(text), tx.query(text, values, options)) } satisfies Transaction))
        .finally(() => note('commit or rollback'));
    },
  };
  return { counted, sent };
}

describe.each(backends())('round trips per request on $name', (backend: Backend) => {
  let acquirer: AcquirerFake;
  beforeAll(async () => {
    acquirer = await startAcquirerFake();
  });
  afterAll(() => acquirer.close());

  async function server() {
    const { db, schema } = await freshSchema(backend);
    const { counted, sent } = recording(db);
    const services = createServices(counted, { schema, snapshotEvery: 100, idempotencyTtlSeconds: 86_400, acquirerUrl: acquirer.url });
    const app = await buildApp(services);
    const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
      app.inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
    const account = async () => {
      const res = await post('/accounts', { owner: 'Ana' });
      expect(res.statusCode).toBe(201);
      await post(`/accounts/${res.json().id}/deposit`, { amount: 1_000 });
      return res.json<{ id: string }>().id;
    };
    /** The statements `request` sends, but wake-up notifications; expects `status`. */
    async function statements(status: number, request: () => Promise<{ statusCode: number; body: string }>): Promise<string[]> {
      // A notification held back from an earlier commit goes out before the count starts.
      await new Promise((resolve) => setTimeout(resolve, 15));
      sent.length = 0;
      const res = await request();
      expect(res.statusCode, res.body).toBe(status);
      return sent.filter((text) => !NOTIFY.test(text));
    }
    return { services, post, account, statements, app };
  }

  it(`deposit: ${BUDGETS.deposit}`, async () => {
    const s = await server();
    const id = await s.account();
    expect(await s.statements(201, () => s.post(`/accounts/${id}/deposit`, { amount: 5 }))).toHaveLength(BUDGETS.deposit);
  });

  it(`deposit into an account the process does not remember: ${BUDGETS['deposit into an account the process does not remember']}`, async () => {
    const s = await server();
    const id = await s.account();
    // Another process's view: a ledger that has not seen the account.
    const other = createServices(s.services.db, { schema: s.services.store.schema, snapshotEvery: 100, idempotencyTtlSeconds: 86_400 });
    const app = await buildApp(other);
    const sent = await s.statements(201, () => app.inject({ method: 'POST', url: `/accounts/${id}/deposit`, payload: '{"amount":5}', headers: { 'content-type': 'application/json' } }));
    expect(sent).toHaveLength(BUDGETS['deposit into an account the process does not remember']);
  });

  it(`deposit with an Idempotency-Key: ${BUDGETS['deposit with an Idempotency-Key']}, retried: ${BUDGETS['deposit with an Idempotency-Key, retried']}`, async () => {
    const s = await server();
    const id = await s.account();
    const keyed = () => s.post(`/accounts/${id}/deposit`, { amount: 5 }, { 'idempotency-key': 'budget-1' });
    expect(await s.statements(201, keyed)).toHaveLength(BUDGETS['deposit with an Idempotency-Key']);
    expect(await s.statements(201, keyed)).toHaveLength(BUDGETS['deposit with an Idempotency-Key, retried']);
  });

  it(`withdraw: ${BUDGETS.withdraw}`, async () => {
    const s = await server();
    const id = await s.account();
    expect(await s.statements(201, () => s.post(`/accounts/${id}/withdraw`, { amount: 5 }))).toHaveLength(BUDGETS.withdraw);
  });

  it(`balance: ${BUDGETS.balance}`, async () => {
    const s = await server();
    const id = await s.account();
    expect(await s.statements(200, () => s.app.inject({ method: 'GET', url: `/accounts/${id}/balance` }))).toHaveLength(BUDGETS.balance);
  });

  it(`charge: ${BUDGETS.charge}, and one call to the acquirer`, async () => {
    const s = await server();
    const captures = acquirer.stats.captureRequests;
    const sent = await s.statements(201, () => s.post('/charges', { amountCents: 2_500, customerId: 'c-1' }, { 'idempotency-key': `budget-charge-${backend.name}` }));
    expect(sent).toHaveLength(BUDGETS.charge);
    expect(acquirer.stats.captureRequests - captures).toBe(1);
  });

  it(`webhook: ${BUDGETS['webhook (order snapshot)']}, redelivered: ${BUDGETS['webhook (order snapshot), redelivered']}`, async () => {
    const s = await server();
    const snapshot = { orderId: '260074525', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z' };
    expect(await s.statements(202, () => s.post('/intake/pied/orders', snapshot))).toHaveLength(BUDGETS['webhook (order snapshot)']);
    expect(await s.statements(202, () => s.post('/intake/pied/orders', snapshot))).toHaveLength(BUDGETS['webhook (order snapshot), redelivered']);
  });
});
