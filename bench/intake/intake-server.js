// The server under test for the webhook row: rastro's own `startServer` from dist/, in a fresh
// schema that is dropped on close.
import { randomBytes } from 'node:crypto';
import { startServer } from 'rastro-server';
import { DATABASE_URL } from '../shared/database.js';
import { serveChild } from '../shared/server-child.js';

await serveChild(async () => {
  const schema = `bench_intake_http_${randomBytes(4).toString('hex')}`;
  const server = await startServer({ port: 0, host: '127.0.0.1', databaseUrl: DATABASE_URL, schema, logLevel: 'silent' });
  const close = async () => {
    try {
      await server.db.query(`drop schema ${schema} cascade`);
    } finally {
      await server.close();
    }
  };
  return {
    info: { url: server.url },
    commands: {
      async events() {
        const { rows } = await server.db.query(`select count(*)::int as n from ${schema}.events`);
        return rows[0].n;
      },
    },
    close,
  };
});
