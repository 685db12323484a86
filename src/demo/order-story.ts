import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/open-database.js';
import { buildApp } from '../http/app.js';
import type { CancelledAfterImportAlert } from '../intake/order-normalizer.js';
import type { NormalizedOrder } from '../intake/order-state.js';
import { pollProvider } from '../intake/provider-poller.js';
import { restTime, startProviderFake, type ProviderFake, type WebhookTarget } from '../intake/provider-fake.js';
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
  stage.log(`  webhook ${orderId} ${status} lastUpdate ${lastUpdate} → HTTP ${code}`);
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
  log('1. Order 260065713, 2026-09-04, as the seed tells it');
  provider.setOrder({ orderId: INCIDENT, status: 'requested', lastUpdate: new Date('2026-09-04T13:19:02Z'), customer });
  await restPage(stage, '13:19 (requested)');
  await webhook(stage, INCIDENT, 'cancelled', '2026-09-04T14:24:11.348Z');
  await restPage(stage, '17:08 (the 14:24 cancelled again)');
  await webhook(stage, INCIDENT, 'requested', '2026-09-04T18:13:40.201Z');
  await webhook(stage, INCIDENT, 'received', '2026-09-04T18:17:05.877Z', { invoice: { number: 'NF-88123' } });
  log(`  normalizer round: ${await round(stage)} event(s)`);
  await services.orders.intake.recordImport({ source: 'pied', orderId: INCIDENT, outcome: 'confirmed', reference: '006' });
  log('  imported into the back office (confirmed, 006)');
  let reread = 0;
  for (let i = 0; i < 50; i++) reread += await round(stage);
  log(`  50 normalizer rounds: ${reread} event(s) read in all (the import; nothing else is new)`);
  const reprocess = await services.orders.reprocess();
  log(`  full reprocess ${reprocess.runId}: ${reprocess.total} events replayed`);
  await services.orders.intake.record('pied', 'rest', { orderId: INCIDENT, status: 'cancelled', lastUpdate: restTime(new Date('2026-09-04T14:24:11Z')), customer, page: 'late' });
  log(`  a late REST page with the 14:24 cancelled: round ${await round(stage)} event(s), refused by the recency guard`);
  return (await services.orders.get(`pied:${INCIDENT}`)).state!;
}

async function stuckOrders(stage: Stage): Promise<unknown[]> {
  stage.log('\n2. The five orders stuck on 2026-09-08: webhook at .512 s, then the REST page at the whole second');
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
  stage.log('\n3. A real cancellation of the imported order');
  await webhook(stage, INCIDENT, 'cancelled', '2026-09-05T09:00:00.120Z');
  await round(stage);
  await stage.services.orders.reprocess();
  await stage.services.orders.renormalize(`pied:${INCIDENT}`);
  await round(stage);
  stage.log(`  after a round, a full reprocess and a re-normalize: ${alerts.length} alert(s) sent`);
}

/** Seed 004's story on a fresh embedded database at `url`, with the fake provider and a real HTTP server. */
export async function runOrderStory(options: { url: string; log: (line: string) => void }): Promise<OrderStoryReport> {
  const db = await openDatabase({ url: options.url });
  const alerts: CancelledAfterImportAlert[] = [];
  const provider = await startProviderFake();
  try {
    await migrate(db);
    const services = createServices(db, { schema: 'rastro', snapshotEvery: 100, idempotencyTtlSeconds: 86_400 }, {
      alert: async (alert, key) => {
        alerts.push(alert);
        options.log(`  ALERT ${alert.order} cancelled after import at ${alert.cancelledAt} (key ${key})`);
        return { sent: true };
      },
    });
    const app = await buildApp(services);
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as { port: number };
      const stage: Stage = { services, provider, target: { baseUrl: `http://127.0.0.1:${port}`, source: 'pied' }, log: options.log };
      const state = await incident(stage);
      options.log(`  state: ${state.status}, ${state.lifecycle}, paidAt ${state.paidAt}, alerts ${alerts.length}`);
      const invoices = await stuckOrders(stage);
      await realCancellation(stage, alerts);
      return { alerts, incident: state, invoices };
    } finally {
      await app.close();
    }
  } finally {
    await provider.close();
    await db.close();
  }
}
