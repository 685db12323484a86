import { resolveConfig, type RastroConfig } from '../config.js';
import { openServices, type Services } from '../server.js';
import type { EventStore } from '../store/event-store.js';
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
