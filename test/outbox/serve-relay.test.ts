import { describe, expect, it } from 'vitest';
import type { MemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { startServer } from '../../packages/server/src/server.js';
import { DATABASE_URL, schemaName } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

const base = DATABASE_URL ? { databaseUrl: DATABASE_URL } : { dataDir: 'memory://' };

describe(`rastro serve's relay (${DATABASE_URL ? 'postgres' : 'pglite'})`, () => {
  it('publishes what the outbox holds in process without a broker, and runs no relay with relay off', async () => {
    const schema = schemaName();
    const server = await startServer({ ...base, schema, port: 0, logLevel: 'silent', brokerUrl: undefined });
    try {
      expect(server.relay?.runId).toBe('relay:outbox');
      expect(server.publisher?.kind).toBe('memory');
      const outbox = createOutbox(server.db, { schema });
      await server.db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId: 'o1', type: 'OrderPlaced', payload: { n: 1 } }));
      const published = (server.publisher as MemoryPublisher).published;
      await eventually(() => published.length === 1, 'the message published in process');
      expect(published[0]).toMatchObject({ aggregateId: 'o1', type: 'OrderPlaced', payload: { n: 1 } });
    } finally {
      await server.close();
    }
    const quiet = await startServer({ ...base, schema, port: 0, logLevel: 'silent', relay: false });
    try {
      expect(quiet.relay).toBeUndefined();
    } finally {
      // Cleanup, not an assertion: the running server's own sessions may hold the schema's locks.
      await quiet.db.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
      await quiet.close();
    }
  });
});
