// The server under test: rastro's own `startServer` from dist/, as `rastro serve` runs it, with
// charges against the acquirer at `acquirerUrl`, in a fresh schema dropped on close. serve's
// reconciliation loop is off (`reconcileIntervalSeconds: 0`): nothing is stale during the load.
// The parent can ask it for its CPU time (`cpu`) and the charges by status (`charges`).
import { randomBytes } from 'node:crypto';
import { startServer } from '../../dist/index.js';
import { DATABASE_URL } from '../shared/database.js';
import { serveChild } from '../shared/server-child.js';

await serveChild(async ({ acquirerUrl, relay = true }) => {
  const schema = `bench_charges_${randomBytes(4).toString('hex')}`;
  const server = await startServer({
    port: 0, host: '127.0.0.1', databaseUrl: DATABASE_URL, schema, logLevel: 'silent',
    acquirerUrl, reconcileIntervalSeconds: 0, relay,
  });
  const close = async () => {
    try {
      await server.db.query(`drop schema ${schema} cascade`);
    } finally {
      await server.close();
    }
  };
  return {
    info: { url: server.url, schema },
    commands: {
      async cpu() {
        const { user, system } = process.cpuUsage();
        return (user + system) / 1000;
      },
      charges: () => server.charges.countsByStatus(),
    },
    close,
  };
});
