import { migrate } from 'rastro/internal/db/migrate.js';
import { openDatabase } from 'rastro/internal/db/open-database.js';
import type { CancelledAfterImportAlert } from 'rastro/internal/intake/order-normalizer.js';
import type { NormalizedOrder } from 'rastro/internal/intake/order-state.js';
import { pollProvider } from 'rastro/internal/intake/provider-poller.js';
import { restTime, startProviderFake, type ProviderFake, type WebhookTarget } from 'rastro/internal/intake/provider-fake.js';
import { createServices, type Services } from '../server.js';

export interface OrderStoryReport {
  /** Alerts sent, in order. */
  alerts: CancelledAfterImportAlert[];
  incident: NormalizedOrder;
  /** The five stuck orders' invoices after the REST page. */
  invoices: unknown[];
}

const INCIDENT = '260065713';
const STUCK = ['260074525', '260079167', '260079176', '260079300', '260079309'];
const customer = { name: 'VIVA+ SOLAR' };

interface Stage {
  services: Services;
  provider: ProviderFake;
  target: WebhookTarget;
  log: (line: string) => void;
}

async function webhook(stage: Stage, orderId: string, status: string, lastUpdate: string, extra: Record<string, unknown> = {}): Promise<void> {
  stage.provider.setOrder({ orderId, status: status as never, lastUpdate: new Date(lastUpdate), customer, ...extra });
  const code = await stage.provider.sendWebhook(stage.target, orderId);
  stage.log(`  webhook: order ${orderId} ${status} as of ${lastUpdate} → HTTP ${code}`);
}

async function restPage(stage: Stage, label: string): Promise<void> {
  const { stored } = await pollProvider(stage.services.orders.intake, { source: 'pied', baseUrl: stage.provider.url });
  stage.log(`  REST page ${label}: ${stored} snapshot(s) stored`);
}

async function round(stage: Stage): Promise<number> {
  return (await stage.services.orders.normalizeRound()).events;
}

async function incident(stage: Stage): Promise<NormalizedOrder> {
  const { log, services, provider } = stage;
  log('A shop\'s payment provider reports each order\'s payment status by webhook and on REST pages, late and out of order.');
  log('rastro keeps one state per order, and alerts the back office when an order it imported is cancelled.\n');
  log('1. Order 260065713 on 2026-09-04, as it happened:');
  provider.setOrder({ orderId: INCIDENT, status: 'requested', lastUpdate: new Date('2026-09-04T13:19:02Z'), customer });
  await restPage(stage, '13:19 (requested)');
  await webhook(stage, INCIDENT, 'cancelled', '2026-09-04T14:24:11.348Z');
  await restPage(stage, '17:08 (the 14:24 cancelled again)');
  await webhook(stage, INCIDENT, 'requested', '2026-09-04T18:13:40.201Z');
  await webhook(stage, INCIDENT, 'received', '2026-09-04T18:17:05.877Z', { invoice: { number: 'NF-88123' } });
  log(`  the orders are brought up to date: ${await round(stage)} snapshot(s) read`);
  await services.orders.intake.recordImport({ source: 'pied', orderId: INCIDENT, outcome: 'confirmed', reference: '006' });
  log('  the back office imports the order, and confirms it');
  let reread = 0;
  for (let i = 0; i < 50; i++) reread += await round(stage);
  log(`  50 more rounds of bringing orders up to date: ${reread} event(s) read in all (the import: nothing is read twice)`);
  const reprocess = await services.orders.reprocess();
  log(`  every order rebuilt from all its snapshots (${reprocess.runId}): ${reprocess.total} events read again, and no alert`);
  await services.orders.intake.record('pied', 'rest', { orderId: INCIDENT, status: 'cancelled', lastUpdate: restTime(new Date('2026-09-04T14:24:11Z')), customer, page: 'late' });
  log(`  a late REST page still carries the 14:24 cancellation: ${await round(stage)} event(s) read, and refused, being older than the state it would replace`);
  return (await services.orders.get(`pied:${INCIDENT}`)).state!;
}

async function stuckOrders(stage: Stage): Promise<unknown[]> {
  stage.log('\n2. Five orders of 2026-09-08, each reported by webhook as of 11:54:24.512, then on a REST page (which keeps whole seconds) as of 11:54:24 with its invoice:');
  stage.log('  the same second is not older, so the invoice lands');
  for (const id of STUCK) await webhook(stage, id, 'received', '2026-09-08T11:54:24.512Z');
  await round(stage);
  for (const id of STUCK) stage.provider.setOrder({ orderId: id, status: 'received', lastUpdate: new Date('2026-09-08T11:54:24.512Z'), customer, invoice: { number: `NF-${id}` } });
  await restPage(stage, 'with the invoices');
  await round(stage);
  const invoices = await Promise.all(STUCK.map(async (id) => (await stage.services.orders.get(`pied:${id}`)).state!.invoice));
  for (const [i, id] of STUCK.entries()) stage.log(`  ${id}: invoice ${JSON.stringify(invoices[i])}`);
  return invoices;
}

async function realCancellation(stage: Stage, alerts: CancelledAfterImportAlert[]): Promise<void> {
  stage.log('\n3. The imported order 260065713 is really cancelled, on 2026-09-05');
  await webhook(stage, INCIDENT, 'cancelled', '2026-09-05T09:00:00.120Z');
  await round(stage);
  await stage.services.orders.reprocess();
  await stage.services.orders.renormalize(`pied:${INCIDENT}`);
  await round(stage);
  stage.log(`  brought up to date, every order rebuilt, then this one rebuilt: ${alerts.length} alert(s) sent in all`);
}

/**
 * Where the fake provider delivers its webhooks: the caller serves `services` over HTTP (the
 * intake routes, as `rastro serve` does) and answers the server's base URL and how to close it.
 */
export type ServeIntake = (services: Services) => Promise<{ baseUrl: string; close(): Promise<void> }>;

/** Seed 004's story on a fresh embedded database at `url`, with the fake provider delivering webhooks to the server `serve` starts. */
export async function runOrderStory(options: { url: string; log: (line: string) => void; serve: ServeIntake }): Promise<OrderStoryReport> {
  const db = await openDatabase({ url: options.url });
  const alerts: CancelledAfterImportAlert[] = [];
  const provider = await startProviderFake();
  try {
    await migrate(db);
    const services = createServices(db, { schema: 'rastro', snapshotEvery: 100, idempotencyTtlSeconds: 86_400 }, {
      alert: async (alert, key) => {
        alerts.push(alert);
        options.log(`  ALERT to the back office: order ${alert.order} cancelled after its import, at ${alert.cancelledAt}`);
        return { sent: true };
      },
    });
    const server = await options.serve(services);
    try {
      const stage: Stage = { services, provider, target: { baseUrl: server.baseUrl, source: 'pied' }, log: options.log };
      const state = await incident(stage);
      options.log(`  its state: payment ${state.status}, ${state.lifecycle} in the back office, paid at ${state.paidAt}; alerts ${alerts.length}`);
      const invoices = await stuckOrders(stage);
      await realCancellation(stage, alerts);
      return { alerts, incident: state, invoices };
    } finally {
      await server.close();
    }
  } finally {
    await provider.close();
    await db.close();
  }
}
