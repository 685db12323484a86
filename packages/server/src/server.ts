import { mkdir } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { createAccountLedger, type AccountLedger } from 'rastro/internal/accounts/account-ledger.js';
import { resolveConfig, type RastroConfig, type RastroOptions } from './config.js';
import type { Database } from 'rastro/internal/db/database.js';
import { migrate } from 'rastro/internal/db/migrate.js';
import { openDatabase } from 'rastro/internal/db/open-database.js';
import { untilDatabaseReachable, type StartAttempt } from 'rastro/internal/db/until-reachable.js';
import { ClosedError, ConfigError } from 'rastro/internal/errors.js';
import { buildApp } from './http/app.js';
import { listenWhileStarting, type StartingListener } from './http/starting-listener.js';
import { createIdempotencyKeys, type IdempotencyKeys } from './http/idempotency-keys.js';
import { noAlertDestination, orderAlertClient, type OrderAlertSender } from 'rastro/internal/intake/order-alerts.js';
import { createOrders, type Orders } from 'rastro/internal/intake/orders.js';
import { pollProvider } from 'rastro/internal/intake/provider-poller.js';
import { createEventStore, type EventStore } from 'rastro/internal/store/event-store.js';
import { openPublisher } from './brokers/open-broker.js';
import { startTrailLoops } from './operations/trail-loops.js';
import { readKeyFile } from './key-file.js';
import type { Publisher } from 'rastro/internal/brokers/message.js';
import { runRelay, type Relay } from 'rastro/internal/outbox/relay.js';
import { ORDER_NORMALIZER_POLICY } from 'rastro/internal/intake/order-normalizer.js';
import { runLive, type LiveRunner } from 'rastro/internal/processing/live-runner.js';
import { outboxRetention, RETENTION_INTERVAL_MS } from 'rastro/internal/outbox/retention.js';
import { acquirerClient } from 'rastro/internal/charges/acquirer.js';
import { createCharges, type Charges } from 'rastro/internal/charges/charges.js';
import { startReconcileLoop, type ReconcileLoop } from 'rastro/internal/processing/ledger/reconciler.js';
import { startOperations } from './operations/serve-operations.js';
import type { FigureHistory } from './operations/figure-history.js';

export interface Services {
  db: Database;
  store: EventStore;
  ledger: AccountLedger;
  keys: IdempotencyKeys;
  orders: Orders;
  charges: Charges;
}

type ChargeConfig = Pick<RastroConfig, 'acquirerUrl' | 'acquirerTimeoutMs' | 'chargeDeadlineSeconds' | 'chargeReviewAfterSeconds' | 'chargeWhenNotFound' | 'chargeOnDeadline'>;

/** Charges as configured: the acquirer, its timeout, the deadlines and rules of reconciliation. */
export function chargesFor(store: EventStore, config: Partial<ChargeConfig>): Charges {
  return createCharges(store, {
    acquirer: config.acquirerUrl ? acquirerClient(config.acquirerUrl) : undefined,
    timeoutMs: config.acquirerTimeoutMs ?? 10_000,
    deadlineMs: (config.chargeDeadlineSeconds ?? 120) * 1000,
    reviewAfterMs: (config.chargeReviewAfterSeconds ?? 1800) * 1000,
    whenNotFound: config.chargeWhenNotFound ?? 'retry',
    onDeadline: config.chargeOnDeadline ?? 'review',
  });
}

/**
 * Wires the services of one rastro installation on a migrated database. Order alerts go to
 * `alert`, else to `orderAlertUrl`, else wait parked until a destination is set.
 */
export function createServices(
  db: Database,
  config: Pick<RastroConfig, 'schema' | 'snapshotEvery' | 'idempotencyTtlSeconds'> & Partial<Pick<RastroConfig, 'accountCacheSize'>> & { orderAlertUrl?: string; masterKeyFile?: string } & Partial<ChargeConfig>,
  options: { alert?: OrderAlertSender } = {},
): Services {
  const store = createEventStore(db, { schema: config.schema, personalData: config.masterKeyFile ? { masterKey: readKeyFile('RASTRO_MASTER_KEY_FILE', config.masterKeyFile) } : undefined });
  return {
    db,
    store,
    ledger: createAccountLedger(store, { snapshotEvery: config.snapshotEvery, cacheSize: config.accountCacheSize }),
    keys: createIdempotencyKeys(db, { schema: config.schema, ttlMs: config.idempotencyTtlSeconds * 1000 }),
    orders: createOrders(store, { alert: options.alert ?? (config.orderAlertUrl ? orderAlertClient(config.orderAlertUrl) : noAlertDestination) }),
    charges: chargesFor(store, config),
  };
}

/** serve's poll loop: one poll at a time, every `pollIntervalSeconds`, when a provider is configured. */
function startPollLoop(config: RastroConfig, services: Services, log: FastifyInstance['log']): () => void {
  if (!config.providerUrl || config.pollIntervalSeconds === 0) return () => undefined;
  const baseUrl = config.providerUrl;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    pollProvider(services.orders.intake, { source: config.providerSource, baseUrl })
      .then((progress) => log.info({ source: config.providerSource, pages: progress.page, stored: progress.stored, rejected: progress.rejected.length }, 'provider polled'))
      .catch((err: unknown) => log.warn({ error: { message: (err as Error).message, code: (err as { code?: unknown }).code } }, 'provider poll failed'))
      .finally(() => (running = false));
  }, config.pollIntervalSeconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}

/** Opens the configured database (creating the PGlite folder if needed), migrates it, wires the services. */
export async function openServices(config: RastroConfig, options: { alert?: OrderAlertSender } = {}): Promise<Services> {
  if (config.embedded && config.databaseUrl !== 'memory://') await mkdir(config.databaseUrl, { recursive: true });
  const db = await openDatabase({ url: config.databaseUrl, poolSize: config.poolSize });
  try {
    await migrate(db, { schema: config.schema });
    const services = createServices(db, config, options);
    await services.store.assertTransactionIdsCurrent();
    return services;
  } catch (err) {
    await db.close();
    throw err;
  }
}

export interface RunningServer extends Services {
  url: string;
  /** The outbox relay serve runs, unless `RASTRO_RELAY=off`. */
  relay: Relay | undefined;
  publisher: Publisher | undefined;
  /** The order normalizer serve runs live, unless `RASTRO_NORMALIZER=off`. */
  normalizer: LiveRunner | undefined;
  /** serve's reconciliation loop (charges), unless `RASTRO_RECONCILE_INTERVAL_SECONDS=0`. */
  reconciler: ReconcileLoop | undefined;
  /** The figures serve samples every 10 s for the console. */
  figureHistory: FigureHistory;
  app: FastifyInstance;
  config: RastroConfig;
  close(): Promise<void>;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;
const CLEANUP_INTERVAL_MS = 10 * 60 * 1000;

/** The relay and the outbox retention job of `serve`. */
async function startOutbox(services: Services, config: RastroConfig, log: FastifyInstance['log'], publisher: Publisher | undefined) {
  if (!publisher) return { relay: undefined, publisher: undefined, stop: async () => undefined };
  const relay = await runRelay({
    store: services.store, publisher,
    onError: (err) => log.warn({ error: { message: (err as Error).message } }, 'outbox relay batch failed; backing off'),
  });
  const retention = outboxRetention(services.store);
  const clean = async () => {
    if (config.outboxRetention === 'daily-partitions') {
      await retention.ensureDailyPartitions();
      await retention.dropExpiredPartitions({ days: config.outboxRetentionDays });
    }
    await retention.deletePublished({ days: config.outboxRetentionDays });
  };
  const run = () => clean().catch((err: unknown) => log.warn({ error: { message: (err as Error).message } }, 'outbox retention failed'));
  void run();
  const timer = setInterval(run, RETENTION_INTERVAL_MS);
  timer.unref();
  return {
    relay, publisher,
    async stop() {
      clearInterval(timer);
      await relay.stop();
      await publisher.close();
    },
  };
}

/** How {@link startServer} waits for a database it cannot reach at start. */
export interface ServerStartOptions {
  /** Called after each attempt that found the database unreachable; `url` answers 503 `RASTRO_STARTING` meanwhile. */
  onDatabaseWait?: (attempt: StartAttempt & { url: string }) => void;
  /** Aborting it while the database is still unreachable rejects with `RASTRO_CLOSED`. */
  signal?: AbortSignal;
}

function serverUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Opens the services, retrying while the database cannot be reached. From the first failed
 * attempt on, the port answers 503 `RASTRO_STARTING`; the listener is handed back to be closed
 * just before the API listens on the same port.
 */
async function openServicesWhenReachable(config: RastroConfig, start: ServerStartOptions): Promise<{ services: Services; starting: StartingListener | undefined }> {
  let starting: StartingListener | undefined;
  let services: Services | undefined;
  try {
    services = await untilDatabaseReachable(() => openServices(config), {
      signal: start.signal,
      onRetry: async (attempt) => {
        starting ??= await listenWhileStarting(config.host, config.port);
        start.onDatabaseWait?.({ ...attempt, url: serverUrl(config.host, starting.port) });
      },
    });
  } catch (err) {
    await starting?.close();
    throw err;
  }
  if (!services) {
    await starting?.close();
    throw new ClosedError('rastro serve, stopped before its database could be reached,');
  }
  return { services, starting };
}

/**
 * `rastro serve`: migrates, then listens. Refuses a non-loopback host without an API key. While
 * the database cannot be reached at start, it keeps trying (see {@link ServerStartOptions}) and
 * answers 503 `RASTRO_STARTING` on its port meanwhile; only a configuration error rejects.
 *
 * @example
 * ```ts
 * const server = await startServer({ port: 0 })
 * console.log(server.url)
 * await server.close()
 * ```
 */
export async function startServer(options: RastroOptions = {}, start: ServerStartOptions = {}): Promise<RunningServer> {
  const config = resolveConfig(options);
  if (!config.apiKey && !LOOPBACK.test(config.host)) {
    throw new ConfigError(`refusing to listen on ${config.host} without RASTRO_API_KEY: set a key, or listen on 127.0.0.1`);
  }
  const { services, starting } = await openServicesWhenReachable(config, start);
  const logger = config.logLevel === 'silent' ? false : { level: config.logLevel };
  let operations: Awaited<ReturnType<typeof startOperations>>;
  try {
    operations = await startOperations(services, config);
  } catch (err) {
    await starting?.close();
    await services.db.close();
    throw err;
  }
  // Opened before the app, whose /readyz checks it; it connects on first use.
  // It connects (and checks its stream) on first use, once the app's log exists.
  let log: FastifyInstance['log'] | undefined;
  const publisher = config.relay ? openPublisher(config, { onWarning: (message) => log?.warn(message) }) : undefined;
  operations.publisher = publisher;
  const app = await buildApp({
    ...services, apiKey: config.apiKey, logger, allowedHosts: config.allowedHosts,
    timeouts: { headersMs: config.headersTimeoutSeconds * 1000, requestMs: config.requestTimeoutSeconds * 1000, keepAliveMs: config.keepAliveTimeoutSeconds * 1000 }, processors: operations.processors, figureHistory: operations.history, publisher: () => operations.publisher });
  log = app.log;
  operations.start(app.log);
  const cleanup = setInterval(() => {
    services.keys.cleanup().catch((err: unknown) => app.log.warn({ error: { message: (err as Error).message } }, 'idempotency key cleanup failed'));
  }, CLEANUP_INTERVAL_MS);
  cleanup.unref();
  let outbox: Awaited<ReturnType<typeof startOutbox>> | undefined;
  let reconciler: ReconcileLoop | undefined;
  let normalizer: LiveRunner | undefined;
  let trail: Awaited<ReturnType<typeof startTrailLoops>> | undefined;
  const stopPolling = startPollLoop(config, services, app.log);
  try {
    outbox = await startOutbox(services, config, app.log, publisher);
    // Webhook and polled snapshots become orders here, as the relay publishes the outbox.
    if (config.normalizer) {
      normalizer = await runLive(services.orders.normalizer, {
        store: services.store, policy: ORDER_NORMALIZER_POLICY,
        onError: (err) => app.log.warn({ error: { message: (err as Error).message } }, 'order normalizer batch failed; backing off'),
      });
    }
    trail = await startTrailLoops(services.store, config, publisher, app.log);
    if (config.reconcileIntervalSeconds > 0) {
      reconciler = await startReconcileLoop(services.store, {
        types: services.charges.effectTypes,
        intervalMs: config.reconcileIntervalSeconds * 1000,
        onError: (err) => app.log.warn({ error: { message: (err as Error).message } }, 'reconciliation pass failed; backing off'),
        onPass: (report) => app.log.info({ reconciled: report }, 'reconciliation pass'),
      });
    }
    await starting?.close();
    await app.listen({ port: starting?.port ?? config.port, host: config.host });
  } catch (err) {
    await starting?.close();
    clearInterval(cleanup);
    await reconciler?.stop();
    await normalizer?.stop();
    await trail?.stop();
    await operations.stop();
    await (outbox ? outbox.stop() : publisher?.close());
    stopPolling();
    await app.close();
    await services.db.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  return {
    ...services,
    url: serverUrl(config.host, port),
    app,
    config,
    relay: outbox.relay,
    publisher: outbox.publisher,
    reconciler,
    normalizer,
    figureHistory: operations.history,
    async close() {
      clearInterval(cleanup);
      await reconciler?.stop();
      await normalizer?.stop();
    await trail?.stop();
      await operations.stop();
      await outbox.stop();
      stopPolling();
      await app.close();
      await services.db.close();
    },
  };
}
