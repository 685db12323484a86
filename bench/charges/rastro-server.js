// The server under test: rastro's own `startServer` from dist/, as `rastro serve` runs it, with
// charges against the acquirer at `acquirerUrl`, in a fresh schema dropped on close. serve's
// reconciliation loop is off (`reconcileIntervalSeconds: 0`): nothing is stale during the load.
// The parent can ask it for its CPU time and its PostgreSQL backends' (`cpu`) and for the
// charges by status (`charges`).
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { startServer } from 'rastro-server';
import { DATABASE_URL } from '../shared/database.js';
import { serveChild } from '../shared/server-child.js';

/** Linux's clock tick for /proc/<pid>/stat times (USER_HZ), 100 on every common build. */
const TICK_MS = 10;

/**
 * CPU milliseconds of the backends serving `applicationName`, from /proc/<pid>/stat (utime +
 * stime): null when PostgreSQL runs elsewhere, or its processes cannot be read.
 */
async function backendCpuMs(db, applicationName) {
  const { rows } = await db.query('select pid from pg_stat_activity where application_name = $1', [applicationName]);
  let ticks = 0;
  let read = 0;
  for (const { pid } of rows) {
    try {
      const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
      read += 1;
    } catch {
      // gone, or not ours to read
    }
  }
  return read === 0 ? null : ticks * TICK_MS;
}

await serveChild(async ({ acquirerUrl, relay = true }) => {
  const schema = `bench_charges_${randomBytes(4).toString('hex')}`;
  // pg names every connection it opens from here on after the schema, so its backends can be found.
  process.env.PGAPPNAME = schema;
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
        const dbMs = await backendCpuMs(server.db, schema);
        return { cpuMs: (user + system) / 1000, ...(dbMs === null ? {} : { dbMs }) };
      },
      charges: () => server.charges.countsByStatus(),
    },
    close,
  };
});
