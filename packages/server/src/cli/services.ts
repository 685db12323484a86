import { resolveConfig, type RastroConfig } from '../config.js';
import { untilDatabaseReachable } from 'rastro/internal/db/until-reachable.js';
import { openServices, type Services } from '../server.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { cliAlertSender } from './alert-sender.js';

/** Opens rastro's services on the configured database (migrating it), runs `fn`, and closes them. */
export async function withServices<T>(fn: (services: Services, config: RastroConfig) => Promise<T>): Promise<T> {
  const config = resolveConfig({ logLevel: 'silent' });
  const opened = await openServices(config, { alert: cliAlertSender(config) });
  try {
    return await fn(opened, config);
  } finally {
    await opened.db.close();
  }
}

/** {@link withServices} for a command that needs only the event store. */
export const withStore = <T>(fn: (store: EventStore, config: RastroConfig) => Promise<T>): Promise<T> =>
  withServices((services, config) => fn(services.store, config));

/** Aborts on SIGINT or SIGTERM until `dispose` is called. */
function abortOnStop(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  return {
    signal: controller.signal,
    dispose() {
      process.removeListener('SIGINT', abort);
      process.removeListener('SIGTERM', abort);
    },
  };
}

/**
 * {@link withServices} for a role that runs until stopped (`relay`, `live`, `consume`, `normalize`,
 * `reconcile --every`): while the database cannot be reached at start (refused, starting up, out
 * of connection slots) it waits and tries again, a line on stderr per attempt, instead of exiting.
 * A configuration error (a wrong password, a missing database) still ends it. Stopped while
 * waiting, it returns without running `fn`.
 */
export async function withRoleServices(role: string, fn: (services: Services, config: RastroConfig) => Promise<void>): Promise<void> {
  const config = resolveConfig({ logLevel: 'silent' });
  const stop = abortOnStop();
  let opened: Services | undefined;
  try {
    opened = await untilDatabaseReachable(() => openServices(config, { alert: cliAlertSender(config) }), {
      signal: stop.signal,
      onRetry: ({ attempt, reason, retryInMs }) => {
        process.stderr.write(`${new Date().toISOString()} rastro ${role}: waiting for the database: ${reason} (attempt ${attempt}, next in ${(retryInMs / 1000).toFixed(1)} s)\n`);
      },
    });
  } finally {
    stop.dispose();
  }
  if (!opened) {
    console.log(`rastro ${role}: stopped before the database could be reached`);
    return;
  }
  try {
    await fn(opened, config);
  } finally {
    await opened.db.close();
  }
}

/** {@link withRoleServices} for a role that needs only the event store. */
export const withRoleStore = (role: string, fn: (store: EventStore, config: RastroConfig) => Promise<void>): Promise<void> =>
  withRoleServices(role, (services, config) => fn(services.store, config));
