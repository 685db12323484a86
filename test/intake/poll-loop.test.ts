import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProviderFake, type ProviderFake } from '../../packages/rastro/src/intake/provider-fake.js';
import { startServer } from '../../packages/server/src/server.js';
import { schemaName } from '../support/databases.js';

let provider: ProviderFake;
beforeAll(async () => {
  provider = await startProviderFake();
});
afterAll(() => provider.close());

describe('serve with a provider configured', () => {
  it('polls the provider on its interval and stores each order on its pages', async () => {
    provider.setOrder({ orderId: '260074525', status: 'received', lastUpdate: new Date('2026-09-08T11:54:24.512Z') });
    // On DATABASE_URL when it is set (startServer reads it), in a schema of its own.
    const schema = schemaName();
    const server = await startServer({ port: 0, dataDir: 'memory://', schema, logLevel: 'silent', providerUrl: provider.url, providerSource: 'pied', pollIntervalSeconds: 1 });
    try {
      let order;
      for (let i = 0; i < 60 && !order; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        order = await server.orders.get('pied:260074525').catch(() => undefined);
      }
      expect(order?.history).toMatchObject([{ type: 'snapshot', snapshot: { channel: 'rest', lastUpdateText: '2026-09-08T08:54:24-03:00' } }]);
      expect(provider.pagesServed).toBeGreaterThanOrEqual(1);
    } finally {
      await server.db.query(`drop schema "${schema}" cascade`).catch(() => undefined);
      await server.close();
    }
  });

  it('refuses a provider URL that is not http(s)', async () => {
    await expect(startServer({ port: 0, dataDir: 'memory://', logLevel: 'silent', providerUrl: 'ftp://x' })).rejects.toMatchObject({ code: 'RASTRO_CONFIG' });
  });
});
