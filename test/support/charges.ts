import { afterEach } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { acquirerClient } from '../../packages/rastro/src/charges/acquirer.js';
import { startAcquirerFake, type AcquirerFake, type AcquirerFakeOptions } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { createCharges, type Charge, type ChargeOptions, type Charges } from '../../packages/rastro/src/charges/charges.js';
import { reconcileEffects } from '../../packages/rastro/src/processing/ledger/reconciler.js';
import type { EventStore } from '../../packages/rastro/src/store/event-store.js';
import { buildApp } from '../../packages/server/src/http/app.js';
import { createServices, type Services } from '../../packages/server/src/server.js';
import { freshSchema, type Backend } from './databases.js';
import { eventually } from './eventually.js';

export interface ChargeApp {
  services: Services;
  charges: Charges;
  acquirer: AcquirerFake;
  app: FastifyInstance;
  schema: string;
  charge(body: unknown, key?: string): Promise<LightMyRequestResponse>;
  /** Outbox messages of charges, in position order: [aggregateId, type]. */
  messages(): Promise<{ aggregateId: string; type: string }[]>;
  count(table: 'charges' | 'effects' | 'outbox'): Promise<number>;
}

/** A charge API on a fresh schema, with a real-HTTP acquirer fake; short deadlines unless given. */
export async function chargeApp(backend: Backend, options: ChargeOptions = {}, fake: AcquirerFakeOptions = {}): Promise<ChargeApp> {
  const { db, schema } = await freshSchema(backend);
  const acquirer = await startAcquirerFake(fake);
  afterEach(() => acquirer.close());
  const services = createServices(db, { schema, snapshotEvery: 100, idempotencyTtlSeconds: 86_400 });
  const charges = createCharges(services.store, { acquirer: acquirerClient(acquirer.url), timeoutMs: 1_000, deadlineMs: 1_200, reviewAfterMs: 60_000, backoff: { initialMs: 50, maxMs: 200 }, ...options });
  const app = await buildApp({ ...services, charges });
  return {
    services,
    charges,
    acquirer,
    app,
    schema,
    charge: (body, key) =>
      app.inject({ method: 'POST', url: '/charges', payload: JSON.stringify(body), headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) } }),
    async messages() {
      const { rows } = await db.query<{ aggregate_id: string; type: string }>(`select aggregate_id, type from "${schema}".outbox where aggregate_type = 'charge' order by position`);
      return rows.map((row) => ({ aggregateId: row.aggregate_id, type: row.type }));
    },
    async count(table) {
      const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from "${schema}".${table}`);
      return rows[0]!.n;
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One charge in each status, through the real flow: `captured`, `failed` (declined), `review`
 * (captured at the acquirer, which then answered 500 and keeps answering lookups `unknown`:
 * reconciliation sends it to NEEDS_REVIEW past the business deadline) and `pending` (the same
 * ambiguous answer, older than the deadline, not reconciled yet: a stale PENDING charge).
 * `charges` needs a business deadline of a few seconds and a short backoff.
 */
export async function chargesInEveryStatus(store: EventStore, charges: Charges, acquirer: AcquirerFake): Promise<Record<'captured' | 'failed' | 'review' | 'pending', Charge>> {
  const captured = (await charges.start({ amountCents: 12_345, customerId: 'customer-captured' }, 'seed-captured')).charge;
  acquirer.faults.push('decline');
  const failed = (await charges.start({ amountCents: 500, customerId: 'customer-declined' }, 'seed-declined')).charge;
  acquirer.faults.push('capture-then-500');
  acquirer.unknownLookups.set('*', 1_000);
  const started = (await charges.start({ amountCents: 25_000, customerId: 'customer-review' }, 'seed-review')).charge;
  await sleep(charges.deadlineMs + 100);
  const review = await eventually(async () => {
    await reconcileEffects(store, { types: charges.effectTypes });
    const charge = await charges.get(started.id);
    return charge.status === 'NEEDS_REVIEW' && charge;
  }, 'the unknown capture to go to review', 15_000);
  acquirer.faults.push('capture-then-500');
  const pending = (await charges.start({ amountCents: 7_700, customerId: 'customer-pending' }, 'seed-pending')).charge;
  await sleep(charges.deadlineMs + 100);
  return { captured, failed, review, pending };
}
