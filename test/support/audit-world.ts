import { afterEach } from 'vitest';
import { runAudit, type AuditOptions, type AuditReport } from '../../packages/rastro/src/audit/run-audit.js';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { acquirerClient } from '../../packages/rastro/src/charges/acquirer.js';
import { startAcquirerFake, type AcquirerFake } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { createCharges, type Charges } from '../../packages/rastro/src/charges/charges.js';
import { ORDER_IMPORT, ORDER_SNAPSHOT } from '../../packages/rastro/src/intake/order-state.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { runRelay } from '../../packages/rastro/src/outbox/relay.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { createServices, type Services } from '../../packages/server/src/server.js';
import { freshSchema, type Backend } from './databases.js';
import { eventually } from './eventually.js';
import { TIPS_POLICY, tipsWorld } from './ops-fixture.js';

/** A small deployment with something in every table the audit checks, all of it sound. */
export interface AuditWorld extends Services {
  schema: string;
  charges: Charges;
  acquirer: AcquirerFake;
  /** Runs SQL with `{s}` standing for the quoted schema. */
  sql<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<Row[]>;
  audit(options?: AuditOptions): Promise<AuditReport>;
  /** Ids of things to damage. */
  ids: { account: string; capturedCharge: string; failedCharge: string; order: string };
  /** Relays the outbox until nothing is pending. */
  relay(): Promise<void>;
}

const customer = { name: 'Ana', document: '123' };

async function seedOrders(services: Services): Promise<void> {
  const record = (body: Record<string, unknown>, at: string) => services.orders.intake.record('pied', 'webhook', body, { capturedAt: new Date(at) });
  await record({ orderId: '1', status: 'requested', lastUpdate: '2026-09-08T10:00:00.000Z', customer }, '2026-09-08T10:00:01Z');
  await record({ orderId: '1', status: 'received', lastUpdate: '2026-09-08T10:05:00.000Z', customer, invoice: { number: 'NF-1' } }, '2026-09-08T10:05:01Z');
  // A stale one the recency guard refuses.
  await record({ orderId: '1', status: 'requested', lastUpdate: '2026-09-08T09:00:00.000Z' }, '2026-09-08T10:06:00Z');
  await record({ orderId: '2', status: 'partial', lastUpdate: '2026-09-08T11:00:00.000Z' }, '2026-09-08T11:00:01Z');
  await services.orders.normalizeRound();
}

export async function auditWorld(backend: Backend): Promise<AuditWorld> {
  const { db, schema } = await freshSchema(backend);
  const acquirer = await startAcquirerFake();
  afterEach(() => acquirer.close());
  const services = createServices(db, { schema, snapshotEvery: 2, idempotencyTtlSeconds: 86_400 });
  const { store } = services;
  const charges = createCharges(store, { acquirer: acquirerClient(acquirer.url), timeoutMs: 2_000, deadlineMs: 60_000 });
  const account = await services.ledger.open('Ana');
  for (const amount of [100, 250, 75]) await services.ledger.deposit(account.id, amount);
  await seedOrders(services);
  const tips = tipsWorld();
  for (const n of [1, 2, 3]) await store.append(`tip-${n}`, [{ type: 'tip.paid', data: { cents: n * 100 } }], { expectedVersion: 'no-stream' });
  await runLiveRound(tips.processor, { store, policy: TIPS_POLICY, partitions: 2 });
  const captured = await charges.start({ amountCents: 1000, customerId: 'c-1' }, 'audit-key-1');
  acquirer.faults.push('decline');
  const second = await charges.start({ amountCents: 2000, customerId: 'c-2' }, 'audit-key-2');
  const publisher = createMemoryPublisher();
  const world: AuditWorld = {
    ...services, schema, charges, acquirer,
    ids: { account: account.id, capturedCharge: captured.charge.id, failedCharge: second.charge.id, order: 'pied:1' },
    sql: async (text, values) => (await db.query(text.replaceAll('{s}', `"${schema}"`), values)).rows as never,
    audit: (options = {}) => runAudit(store, {
      typesOf: (processor) => (processor === 'tips' ? ['tip.paid'] : processor === 'orders' ? [ORDER_SNAPSHOT, ORDER_IMPORT] : null),
      chargeDeadlineMs: 60_000,
      ...options,
    }),
    async relay() {
      const relay = await runRelay({ store, publisher, partitions: 2, pollIntervalMs: 50 });
      try {
        await eventually(async () => (await relayAdmin(store).status())[0]?.pending === 0, 'the relay to publish everything');
      } finally {
        await relay.stop();
      }
    },
  };
  await world.relay();
  return world;
}

/** A finding as tests compare them: check, kind and subject. */
export const brief = (report: AuditReport) => report.findings.map((f) => `${f.check}/${f.kind}/${f.subject.type}:${f.subject.id}`).sort();
